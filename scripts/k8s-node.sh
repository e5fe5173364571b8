#!/usr/bin/env bash
# k8s-node.sh up|down|status: a real single-node Kubernetes cluster on this machine, offline,
# for the k8s: sandbox tests.
#
#   up     builds (or takes from the cache) kube-apiserver, kubelet, kube-scheduler and
#          kube-controller-manager v1.37.2 from the tools module test/k8s, installs etcd,
#          containerd, runc and the CNI plugins from Debian when missing, and starts etcd, a
#          private containerd (its own config, socket and directories: Docker's is never
#          touched), the control plane and the kubelet, all on 127.0.0.1. It imports the pause
#          image and the test images from Docker (no registry), waits for the node to be Ready
#          and writes the admin kubeconfig to /var/lib/tapebox-k8s/admin.kubeconfig.
#          Running it again with the cluster up only checks it.
#   down   stops everything up started, removes its containers, mounts, network namespaces,
#          bridge, cgroups, iptables chains and state, and restores the sysctls the kubelet
#          changed. The binaries stay cached. Safe to run at any time, also twice.
#   status says whether the node is Ready.
#
# The network is the CNI bridge plugin: a bridge that is no gateway and masquerades nothing,
# so a pod has no route off the node. It enforces no NetworkPolicy (no plugin that does can
# be had offline here: Calico, Cilium and kube-router come from registries), so a k8s:
# sandbox's deny-all policy has no effect on this cluster. Where Docker runs, its FORWARD
# policy (DROP, which bridged traffic meets through br_netfilter) keeps the pods from
# reaching each other too: a sandbox's probe then says it cannot tell whether policies are
# enforced; where pods reach each other, the probe finds they are not, and a sandbox without
# a network refuses to run unless --allow-network-unenforced (allow-network-unenforced=1 in
# the spec, as the tests give). The kubelet limits every pod to 1024 processes
# (podPidsLimit), though the API server does not proxy to a node on 127.0.0.1, so a
# sandbox cannot read that limit and says so.
#
# Binaries are cached by version under /var/cache/tapebox-k8s/v$K8S_VERSION (the Go build
# cache makes a rebuild take seconds; cold, about 5 minutes on 2 cores). Logs go to
# /var/lib/tapebox-k8s/log/.
set -euo pipefail

K8S_VERSION=1.37.2
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${TAPEBOX_K8S_CACHE:-/var/cache/tapebox-k8s}/v$K8S_VERSION
STATE=/var/lib/tapebox-k8s
RUN=/run/tapebox-k8s
LOG=$STATE/log
PKI=$STATE/pki
CTRD_SOCK=$RUN/containerd/containerd.sock
KUBECONFIG_OUT=$STATE/admin.kubeconfig
BRIDGE=tbk8s0
SUBNET=10.88.77.0/24
CNI_NET=tapebox-k8s
PAUSE_IMAGE=docker.io/tapebox/k8s-pause:1
IMAGES=${TAPEBOX_K8S_IMAGES:-tapebox/sandbox:bookworm tapebox/tiny:latest}
SYSCTLS="kernel.panic kernel.panic_on_oops vm.overcommit_memory"
API=https://127.0.0.1:6443

log() { printf '%s k8s-node: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() {
	log "ERROR: $*"
	for f in "$LOG"/*.log; do
		[ -s "$f" ] || continue
		echo "----- last lines of $f -----" >&2
		tail -n 15 "$f" >&2 || true
	done
	exit 1
}

# --- processes ------------------------------------------------------------------------

# start NAME BINARY ARGS...: runs a daemon in its own session, pid in $RUN/NAME.pid.
start() {
	local name=$1
	shift
	if running "$name"; then
		log "$name already running (pid $(cat "$RUN/$name.pid"))"
		return
	fi
	setsid "$@" >"$LOG/$name.log" 2>&1 </dev/null &
	echo $! >"$RUN/$name.pid"
	log "started $name (pid $!)"
}

# running NAME: the pid file names a live process running the binary it started.
running() {
	local pidf=$RUN/$1.pid pid
	[ -f "$pidf" ] || return 1
	pid=$(cat "$pidf")
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
	tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q -- "$(cat "$RUN/$1.pid.cmd" 2>/dev/null || echo "$1")"
}

# stop NAME: TERM, then KILL after 10 s, the process of the pid file (only if it is ours).
stop() {
	local name=$1 pidf=$RUN/$1.pid pid i
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf")
	if running "$name"; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 100); do
			[ -d "/proc/$pid" ] || break
			sleep 0.1
		done
		if [ -d "/proc/$pid" ]; then
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.2
		fi
		log "stopped $name (pid $pid)"
	fi
	rm -f "$pidf" "$pidf.cmd"
}

# --- prerequisites --------------------------------------------------------------------

need_packages() {
	local missing=()
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v containerd >/dev/null || missing+=(containerd)
	command -v ctr >/dev/null || missing+=(containerd)
	command -v runc >/dev/null || missing+=(runc)
	[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] || missing+=(containernetworking-plugins)
	command -v openssl >/dev/null || missing+=(openssl)
	command -v curl >/dev/null || missing+=(curl)
	command -v iptables >/dev/null || missing+=(iptables)
	[ ${#missing[@]} -eq 0 ] && return
	log "installing from apt: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Debian's postinst would start a system etcd on our ports where an init system runs.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	if ! apt-get install -y --no-install-recommends "${missing[@]}" >"$LOG/apt.log" 2>&1; then
		apt-get update >>"$LOG/apt.log" 2>&1 || true
		apt-get install -y --no-install-recommends "${missing[@]}" >>"$LOG/apt.log" 2>&1 || { rm -f /usr/sbin/policy-rc.d; die "apt-get install ${missing[*]} failed (see $LOG/apt.log)"; }
	fi
	rm -f /usr/sbin/policy-rc.d
}

build_binaries() {
	local bin=$CACHE/bin have=1 c
	for c in kube-apiserver kubelet kube-scheduler kube-controller-manager pause; do
		[ -x "$bin/$c" ] || have=0
	done
	if [ $have = 1 ]; then
		log "binaries v$K8S_VERSION cached in $bin"
		return
	fi
	command -v go >/dev/null || die "go is needed to build Kubernetes v$K8S_VERSION"
	mkdir -p "$bin"
	log "building Kubernetes v$K8S_VERSION into $bin (about 5 minutes cold on 2 cores; seconds with a warm Go build cache)"
	local t0=$SECONDS
	(
		cd "$ROOT/test/k8s"
		CGO_ENABLED=0 go build -trimpath -o "$bin/.tmp/" \
			-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#1.}" \
			k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubelet \
			k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager
		CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/.tmp/pause" ./pause
	) >"$LOG/build.log" 2>&1 || die "go build of Kubernetes failed (see $LOG/build.log)"
	mv "$bin"/.tmp/* "$bin"/ && rmdir "$bin/.tmp"
	log "built in $((SECONDS - t0)) s"
}

# --- certificates ---------------------------------------------------------------------

# cert NAME SUBJECT EXT: a key and a certificate signed by the CA.
cert() {
	local name=$1 subj=$2 ext=$3
	[ -s "$PKI/$name.crt" ] && return
	openssl req -new -newkey rsa:2048 -nodes -keyout "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
	printf '%s\n' "$ext" >"$PKI/$name.ext"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

make_pki() {
	mkdir -p "$PKI"
	chmod 700 "$PKI"
	if [ ! -s "$PKI/ca.crt" ]; then
		openssl req -x509 -new -newkey rsa:2048 -nodes -keyout "$PKI/ca.key" -subj "/CN=tapebox-k8s-ca" \
			-days 3650 -sha256 -out "$PKI/ca.crt" 2>/dev/null
	fi
	local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
	cert apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert admin "/O=system:masters/CN=admin" "$client"
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
	cert kubelet "/O=system:nodes/CN=system:node:127.0.0.1" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
	if [ ! -s "$PKI/sa.key" ]; then
		openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
		openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
	fi
	kubeconfig "$KUBECONFIG_OUT" admin
	kubeconfig "$STATE/kubelet.kubeconfig" kubelet
}

# kubeconfig FILE CERT: a kubeconfig for 127.0.0.1:6443 with the named client certificate.
kubeconfig() {
	local b64='base64 -w0'
	cat >"$1.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: tapebox
  cluster:
    server: $API
    certificate-authority-data: $($b64 <"$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $($b64 <"$PKI/$2.crt")
    client-key-data: $($b64 <"$PKI/$2.key")
contexts:
- name: tapebox
  context:
    cluster: tapebox
    user: $2
current-context: tapebox
EOF
	chmod 600 "$1.tmp"
	mv "$1.tmp" "$1"
}

# --- configuration --------------------------------------------------------------------

write_configs() {
	mkdir -p "$STATE/containerd/root" "$RUN/containerd/state" "$STATE/cni/net.d" "$STATE/kubelet" "$STATE/etcd" "$STATE/opt"
	cat >"$STATE/containerd/config.toml" <<EOF
# A private containerd for the test cluster: nothing here is shared with Docker's.
version = 2
root = "$STATE/containerd/root"
state = "$RUN/containerd/state"
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[debug]
  address = "$RUN/containerd/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This machine cannot lower oom_score_adj; without it runc fails with
  # "can't get final child's PID from pipe".
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$STATE/cni/net.d"
EOF
	# A bridge that is no gateway and masquerades nothing: a pod has its own network
	# namespace with no route out, much like docker's --network none.
	cat >"$STATE/cni/net.d/10-tapebox.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NET",
  "plugins": [
    {"type": "bridge", "bridge": "$BRIDGE", "isGateway": false, "ipMasq": false,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET"}]]}},
    {"type": "loopback"}
  ]
}
EOF
	cat >"$STATE/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
failSwapOn: false
failCgroupV1: false
# A pod has no process limit of its own: this one stops a fork bomb in a sandbox's pod.
podPidsLimit: 1024
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTRD_SOCK
tlsCertFile: $PKI/kubelet.crt
tlsPrivateKeyFile: $PKI/kubelet.key
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
# Never evict the tests' pods over a full disk or image garbage.
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
}

# --- host state the kubelet changes ---------------------------------------------------

save_sysctls() {
	[ -s "$STATE/sysctl.orig" ] && return
	local k
	for k in $SYSCTLS; do
		echo "$k=$(sysctl -n "$k")"
	done >"$STATE/sysctl.orig"
}

restore_sysctls() {
	[ -s "$STATE/sysctl.orig" ] || return 0
	local kv
	while read -r kv; do
		sysctl -q -w "$kv" >/dev/null 2>&1 || log "could not restore $kv"
	done <"$STATE/sysctl.orig"
	log "restored sysctls: $(tr '\n' ' ' <"$STATE/sysctl.orig")"
}

remove_iptables() {
	local ipt table chain rule
	for ipt in iptables ip6tables; do
		command -v $ipt >/dev/null || continue
		for table in filter nat mangle; do
			for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT KUBE-PROXY-CANARY; do
				$ipt -w -t $table -n -L "$chain" >/dev/null 2>&1 || continue
				# Remove the rules that jump to the chain, then the chain.
				{ $ipt -w -t $table -S 2>/dev/null | grep -- "-j $chain\$\|-j $chain " || true; } | sed 's/^-A /-D /' | while read -r rule; do
					eval "$ipt -w -t $table $rule" 2>/dev/null || true
				done
				$ipt -w -t $table -F "$chain" 2>/dev/null || true
				$ipt -w -t $table -X "$chain" 2>/dev/null || true
			done
		done
	done
}

remove_cgroups() {
	local d pid
	# Processes of pods whose shim died with a killed cluster are still in the kubelet's
	# cgroups (and only ours are: Docker's containers live under /docker).
	for d in /sys/fs/cgroup/pids/kubepods /sys/fs/cgroup/memory/kubepods /sys/fs/cgroup/kubepods; do
		[ -d "$d" ] || continue
		find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u | while read -r pid; do
			[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
		done
	done
	sleep 0.5
	for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/kubepods.slice; do
		[ -d "$d" ] || continue
		# Depth first: a cgroup goes only once it has no children (and no processes).
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		[ -d "$d" ] && log "cgroup $d is still there (processes left in it?)"
	done
	return 0
}

# unmount_under DIR: lazily unmounts every mount point under DIR, deepest first.
unmount_under() {
	local m
	awk -v p="$1" '$2 == p || index($2, p "/") == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}

# --- the images -----------------------------------------------------------------------

ctr_() { ctr --address "$CTRD_SOCK" --namespace k8s.io "$@"; }

# import_image REF: copies a Docker image into the private containerd, unless the same
# image ID was imported before.
import_image() {
	local ref=$1 id mark
	id=$(docker image inspect --format '{{.Id}}' "$ref" 2>/dev/null) || { log "image $ref is not in Docker: not imported"; return 0; }
	mark=$STATE/images/$(echo "$ref" | tr '/:' '__')
	if [ "$(cat "$mark" 2>/dev/null)" = "$id" ] && ctr_ images ls -q | grep -qx "docker.io/$ref"; then
		return
	fi
	local t0=$SECONDS
	docker save "$ref" | ctr_ images import - >>"$LOG/images.log" 2>&1 || die "import $ref into containerd failed (see $LOG/images.log)"
	mkdir -p "$STATE/images"
	echo "$id" >"$mark"
	log "imported $ref into the cluster's containerd ($((SECONDS - t0)) s)"
}

pause_image() {
	if ctr_ images ls -q | grep -qx "$PAUSE_IMAGE"; then
		return
	fi
	command -v docker >/dev/null || die "docker is needed to build the pause image"
	local dir
	dir=$(mktemp -d)
	cp "$CACHE/bin/pause" "$dir/pause"
	tar -C "$dir" -c pause | docker import -c 'ENTRYPOINT ["/pause"]' - "${PAUSE_IMAGE#docker.io/}" >/dev/null
	rm -rf "$dir"
	docker save "${PAUSE_IMAGE#docker.io/}" | ctr_ images import - >>"$LOG/images.log" 2>&1 || die "import the pause image failed"
	log "pause image $PAUSE_IMAGE imported"
}

# --- the API --------------------------------------------------------------------------

api() {
	curl -sS --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API$1"
}

# wait_for WHAT SECONDS CMD...: retries CMD until it succeeds.
wait_for() {
	local what=$1 limit=$2 t0=$SECONDS
	shift 2
	until "$@" >/dev/null 2>&1; do
		[ $((SECONDS - t0)) -lt "$limit" ] || die "$what not ready after $limit s"
		sleep 0.3
	done
	log "$what ready ($((SECONDS - t0)) s)"
}

node_ready() {
	api /api/v1/nodes/127.0.0.1 | tr -d ' \n' | grep -q '"type":"Ready","status":"True"'
}

sa_ready() { api /api/v1/namespaces/default/serviceaccounts/default | grep -q '"name": *"default"'; }

# --- up, down, status -----------------------------------------------------------------

up() {
	[ "$(id -u)" = 0 ] || die "run as root"
	mkdir -p "$STATE" "$LOG" "$RUN"
	if node_ready 2>/dev/null && running kubelet && running kube-apiserver; then
		log "the node is up and Ready; kubeconfig $KUBECONFIG_OUT"
		import_images
		return
	fi
	local t0=$SECONDS d alive=0
	for d in containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet; do
		running "$d" && alive=1
	done
	if [ $alive = 0 ] && { [ -d "$STATE/etcd" ] || [ -n "$(ls -A "$RUN" 2>/dev/null)" ]; }; then
		# What a killed session left (state, mounts, cgroups, sysctls) goes first: a clean slate.
		log "state of an earlier cluster whose processes are gone: cleaning it up first"
		down
		mkdir -p "$STATE" "$LOG" "$RUN"
	fi
	need_packages
	build_binaries
	make_pki
	write_configs
	save_sysctls

	local bin=$CACHE/bin
	echo containerd >"$RUN/containerd.pid.cmd"
	start containerd containerd --config "$STATE/containerd/config.toml"
	wait_for containerd 30 ctr_ version
	echo etcd >"$RUN/etcd.pid.cmd"
	start etcd etcd --name tapebox-k8s --data-dir "$STATE/etcd" \
		--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
		--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster tapebox-k8s=http://127.0.0.1:2380
	wait_for etcd 30 curl -sf --max-time 2 http://127.0.0.1:2379/health
	echo "$bin/kube-apiserver" >"$RUN/kube-apiserver.pid.cmd"
	start kube-apiserver "$bin/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
		--tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
		--client-ca-file="$PKI/ca.crt" \
		--service-account-issuer=https://kubernetes.default.svc \
		--service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
		--service-cluster-ip-range=10.0.0.0/24 \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" \
		--kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types=InternalIP,Hostname \
		--endpoint-reconciler-type=none --allow-privileged=false
	wait_for kube-apiserver 60 api /readyz
	echo "$bin/kube-controller-manager" >"$RUN/kube-controller-manager.pid.cmd"
	start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig="$KUBECONFIG_OUT" \
		--leader-elect=false --bind-address=127.0.0.1 \
		--service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt"
	echo "$bin/kube-scheduler" >"$RUN/kube-scheduler.pid.cmd"
	start kube-scheduler "$bin/kube-scheduler" --kubeconfig="$KUBECONFIG_OUT" --leader-elect=false --bind-address=127.0.0.1
	pause_image
	echo "$bin/kubelet" >"$RUN/kubelet.pid.cmd"
	start kubelet "$bin/kubelet" --hostname-override=127.0.0.1 --root-dir="$STATE/kubelet" \
		--cert-dir="$STATE/kubelet/pki" --kubeconfig="$STATE/kubelet.kubeconfig" --config="$STATE/kubelet/config.yaml"
	wait_for "node 127.0.0.1" 120 node_ready
	wait_for "default service account" 60 sa_ready
	import_images
	log "up in $((SECONDS - t0)) s; KUBECONFIG=$KUBECONFIG_OUT"
}

import_images() {
	local ref
	for ref in $IMAGES; do
		import_image "$ref"
	done
}

down() {
	[ "$(id -u)" = 0 ] || die "run as root"
	mkdir -p "$RUN"
	stop kubelet
	stop kube-scheduler
	stop kube-controller-manager
	stop kube-apiserver
	stop etcd
	# The pods' containers: killed and removed through our containerd while it runs.
	if running containerd; then
		local id
		for id in $(ctr_ tasks ls -q 2>/dev/null); do
			ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
		done
		sleep 0.5
		for id in $(ctr_ tasks ls -q 2>/dev/null); do
			ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true
		done
		for id in $(ctr_ containers ls -q 2>/dev/null); do
			ctr_ containers delete "$id" >/dev/null 2>&1 || true
		done
	fi
	stop containerd
	# Shims of our containerd that outlived it (they name its socket on their command line).
	local p
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "containerd-shim.*-address $CTRD_SOCK"; then
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
	# The netns entries CNI made for the pods, the bridge, the IPAM records.
	for p in /var/run/netns/cni-*; do
		[ -e "$p" ] || continue
		umount -l "$p" 2>/dev/null || true
		rm -f "$p"
	done
	ip link del "$BRIDGE" >/dev/null 2>&1 || true
	rm -rf "/var/lib/cni/networks/$CNI_NET" /var/lib/cni/results
	rmdir /var/lib/cni/networks /var/lib/cni 2>/dev/null || true
	unmount_under "$STATE"
	unmount_under "$RUN"
	remove_cgroups
	remove_iptables
	restore_sysctls
	rm -rf /var/lib/kubelet/device-plugins /var/log/pods /var/log/containers
	rmdir /var/lib/kubelet 2>/dev/null || true
	rm -rf "$STATE" "$RUN"
	log "down: cluster stopped and host state restored (binaries stay in $CACHE)"
}

status() {
	if [ -s "$PKI/admin.crt" ] && node_ready; then
		log "node 127.0.0.1 Ready; KUBECONFIG=$KUBECONFIG_OUT"
	else
		log "not up"
		return 1
	fi
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
	echo "usage: $0 up|down|status" >&2
	exit 2
	;;
esac
