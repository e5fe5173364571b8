// Package telemetry samples a Docker container's CPU and memory into a CSV file next to a
// tape, four times a second, on the tape's clock.
//
//	s, err := telemetry.Start(ctx, telemetry.Options{Container: "mybox", Start: tapeStart,
//		Path: "run.telemetry.csv"})
//	...
//	defer s.Close()
//
// # Columns
//
//	t_ms                milliseconds since Options.Start (the tape's meta.started_at), so rows
//	                    line up with the steps' timing
//	time                when the sample was really taken, UTC, RFC 3339 with nanoseconds
//	cpu_percent         CPU used since the previous row, 100 = one core busy (as docker stats);
//	                    empty on the first row
//	cpu_ms              cumulative CPU time of the container
//	memory_bytes        usage minus the inactive file cache (cgroup v1 total_inactive_file,
//	                    v2 inactive_file), as docker stats computes it
//	memory_limit_bytes  the container's memory limit, the host's memory when it has none
//	pids                processes in the container
//	source              cgroup-v1, cgroup-v2 or api: where the row came from
//
// An unknown value is an empty cell, never a zero.
//
// # Sources
//
// The Docker stats API answers a one-shot request only about once a second (0.7 to 1.0 s a
// call on engine 20.10), too slow for 4 Hz. When the engine runs on this host, the sampler
// reads the container's cgroup files directly: it finds them through /proc/<pid>/cgroup of
// the container's init process, else at Docker's usual places (cgroup v1
// /sys/fs/cgroup/{cpuacct,memory,pids}/docker/<id>, v2
// /sys/fs/cgroup/system.slice/docker-<id>.scope or /sys/fs/cgroup/docker/<id>). When they
// cannot be found (a remote engine, another namespace), it falls back to the API's stats
// stream at the stream's own rate, says so in a log line, and marks the rows "api".
//
// The engine is the one DOCKER_HOST names, else the docker CLI's active context, else the
// default socket (ResolveEndpoint).
//
// # Failures
//
// A missing or stopped container fails Start. A failed read or a broken stats stream is
// logged (once, then every 20th repeat) and sampling goes on; a cgroup file that is missing
// leaves its column empty and is logged once. A container that stops ends sampling cleanly:
// the last row is written, Done is closed, and Close returns nil.
package telemetry
