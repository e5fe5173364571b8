package corpus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: no cgo, so tapebox stays one static binary

	"github.com/tapebox/tapebox/dataset"
)

// The states of a tape in the journal.
const (
	StateQueued  = "queued"
	StateRunning = "running"
	StateDone    = "done"
	StateFailed  = "failed"
)

// ErrLocked: another process holds the journal.
var ErrLocked = errors.New("journal in use by another process")

// ErrOtherCorpus: the journal was made for another corpus.
var ErrOtherCorpus = errors.New("journal belongs to another corpus")

const schemaSQL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tapes (
	seq       INTEGER PRIMARY KEY AUTOINCREMENT,
	key       TEXT NOT NULL UNIQUE,
	path      TEXT NOT NULL,
	state     TEXT NOT NULL DEFAULT 'queued',
	attempts  INTEGER NOT NULL DEFAULT 0,
	tape_id   TEXT NOT NULL DEFAULT '',
	verdict   TEXT NOT NULL DEFAULT '',
	steps     INTEGER NOT NULL DEFAULT 0,
	restarts  INTEGER NOT NULL DEFAULT 0,
	wall_ms   REAL NOT NULL DEFAULT 0,
	tool_ms   REAL NOT NULL DEFAULT 0,
	ready_ms  REAL NOT NULL DEFAULT 0,
	output    TEXT NOT NULL DEFAULT '',
	error     TEXT NOT NULL DEFAULT '',
	started   TEXT NOT NULL DEFAULT '',
	finished  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS tapes_state ON tapes(state, seq);
`

// Journal is a corpus replay's queue and record, one SQLite database: each tape's state
// (queued, running, done, failed) with its verdict and times. One process holds it at a
// time (an exclusive lock on FILE.lock, released by the kernel when the process dies, even
// by SIGKILL). Its methods are safe for concurrent use.
type Journal struct {
	path string
	db   *sql.DB
	lock *os.File
}

// Entry is a tape the journal hands out to be replayed.
type Entry struct {
	Key, Path string
	// Attempt counts this start of the tape, from 1.
	Attempt int
}

// OpenJournal opens (or creates) the journal at path for the corpus at corpusDir (an
// absolute path): it fails with ErrLocked when another process has it open, and with
// ErrOtherCorpus when it was made for another corpus. Tapes a killed run left running are
// queued again, to be redone from scratch.
func OpenJournal(ctx context.Context, path, corpusDir string) (_ *Journal, err error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path + ".lock")
		lock.Close()
		who := ""
		if h := strings.TrimSpace(string(holder)); h != "" {
			who = " (pid " + h + ")"
		}
		return nil, fmt.Errorf("open journal %s: %w%s: one run per journal; wait for it to end, or give another --journal", path, ErrLocked, who)
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	// WAL with synchronous=NORMAL survives the death of the process (not of the machine's
	// power) with every committed transaction kept, and lets readers see a consistent state.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	j := &Journal{path: path, db: db, lock: lock}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if _, err := db.ExecContext(ctx, schemaSQL); err != nil {
		return nil, fmt.Errorf("open journal %s: not a journal, or damaged: %w", path, err)
	}
	var got string
	switch err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key='corpus'`).Scan(&got); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES ('corpus', ?), ('created', ?)`,
			corpusDir, time.Now().UTC().Format(time.RFC3339)); err != nil {
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	case got != corpusDir:
		return nil, fmt.Errorf("open journal %s: %w: it records %s, not %s; give another --journal", path, ErrOtherCorpus, got, corpusDir)
	}
	if _, err := db.ExecContext(ctx, `UPDATE tapes SET state='queued' WHERE state='running'`); err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	return j, nil
}

// Path returns the journal's file.
func (j *Journal) Path() string { return j.path }

// Close closes the database and releases the lock.
func (j *Journal) Close() error {
	err := j.db.Close()
	j.lock.Close()
	return err
}

// Meta returns a value of the journal's meta table ("" when unset).
func (j *Journal) Meta(ctx context.Context, key string) (string, error) {
	var v string
	err := j.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key=?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

// SetMeta sets a value of the journal's meta table.
func (j *Journal) SetMeta(ctx context.Context, key, value string) error {
	_, err := j.db.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value`, key, value)
	return err
}

// Enqueue adds the tapes of keys (key and path) that the journal does not have yet, in
// transactions of a thousand, and returns how many were new. It reads keys as it goes:
// memory does not grow with their number.
func (j *Journal) Enqueue(ctx context.Context, keys iter.Seq2[[2]string, error]) (int, error) {
	added := 0
	var tx *sql.Tx
	var stmt *sql.Stmt
	n := 0
	commit := func() error {
		if tx == nil {
			return nil
		}
		stmt.Close()
		err := tx.Commit()
		tx, stmt, n = nil, nil, 0
		return err
	}
	for kp, err := range keys {
		if err != nil {
			if tx != nil {
				tx.Rollback()
			}
			return added, err
		}
		if tx == nil {
			if tx, err = j.db.BeginTx(ctx, nil); err != nil {
				return added, fmt.Errorf("enqueue in %s: %w", j.path, err)
			}
			if stmt, err = tx.PrepareContext(ctx, `INSERT INTO tapes(key, path) VALUES (?, ?) ON CONFLICT(key) DO NOTHING`); err != nil {
				tx.Rollback()
				return added, fmt.Errorf("enqueue in %s: %w", j.path, err)
			}
		}
		res, err := stmt.ExecContext(ctx, kp[0], kp[1])
		if err != nil {
			tx.Rollback()
			return added, fmt.Errorf("enqueue %s in %s: %w", kp[0], j.path, err)
		}
		if c, _ := res.RowsAffected(); c > 0 {
			added++
		}
		if n++; n == 1000 {
			if err := commit(); err != nil {
				return added, fmt.Errorf("enqueue in %s: %w", j.path, err)
			}
		}
	}
	if err := commit(); err != nil {
		return added, fmt.Errorf("enqueue in %s: %w", j.path, err)
	}
	return added, nil
}

// Claim marks the next queued tape running and returns it; ok is false when none is queued.
func (j *Journal) Claim(ctx context.Context) (e Entry, ok bool, err error) {
	err = j.db.QueryRowContext(ctx, `UPDATE tapes SET state='running', attempts=attempts+1, started=?, error=''
		WHERE seq=(SELECT seq FROM tapes WHERE state='queued' ORDER BY seq LIMIT 1)
		RETURNING key, path, attempts`, time.Now().UTC().Format(time.RFC3339Nano)).Scan(&e.Key, &e.Path, &e.Attempt)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, fmt.Errorf("claim a tape in %s: %w", j.path, err)
	}
	return e, true, nil
}

// Finish records a tape's outcome: r.State is StateDone or StateFailed.
func (j *Journal) Finish(ctx context.Context, r dataset.ResultRow) error {
	_, err := j.db.ExecContext(ctx, `UPDATE tapes SET state=?, tape_id=?, verdict=?, steps=?, restarts=?, wall_ms=?, tool_ms=?,
		ready_ms=?, output=?, error=?, finished=? WHERE key=?`,
		r.State, r.TapeID, r.Verdict, r.Steps, r.Restarts, r.WallMS, r.ToolMS, r.ReadyMS, r.Output, r.Error,
		time.Now().UTC().Format(time.RFC3339Nano), r.Key)
	if err != nil {
		return fmt.Errorf("record %s in %s: %w", r.Key, j.path, err)
	}
	return nil
}

// Requeue puts a running tape back in the queue (its run was cut off, not failed).
func (j *Journal) Requeue(ctx context.Context, key string) error {
	_, err := j.db.ExecContext(ctx, `UPDATE tapes SET state='queued' WHERE key=? AND state='running'`, key)
	if err != nil {
		return fmt.Errorf("requeue %s in %s: %w", key, j.path, err)
	}
	return nil
}

// Counts is how many tapes of the journal are in each state.
type Counts struct {
	Queued, Running, Done, Failed int
	// Identical and Differs split Done by verdict.
	Identical, Differs int
}

// Total is the number of tapes.
func (c Counts) Total() int { return c.Queued + c.Running + c.Done + c.Failed }

// Counts counts the tapes by state.
func (j *Journal) Counts(ctx context.Context) (Counts, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT state, verdict, count(*) FROM tapes GROUP BY state, verdict`)
	if err != nil {
		return Counts{}, fmt.Errorf("count tapes in %s: %w", j.path, err)
	}
	defer rows.Close()
	var c Counts
	for rows.Next() {
		var state, verdict string
		var n int
		if err := rows.Scan(&state, &verdict, &n); err != nil {
			return Counts{}, err
		}
		switch state {
		case StateQueued:
			c.Queued += n
		case StateRunning:
			c.Running += n
		case StateDone:
			c.Done += n
			switch verdict {
			case VerdictIdentical:
				c.Identical += n
			case VerdictDiffers:
				c.Differs += n
			}
		case StateFailed:
			c.Failed += n
		}
	}
	return c, rows.Err()
}

// Results iterates over the journal's tapes in queue order, as result rows.
func (j *Journal) Results(ctx context.Context) iter.Seq2[dataset.ResultRow, error] {
	return func(yield func(dataset.ResultRow, error) bool) {
		rows, err := j.db.QueryContext(ctx, `SELECT key, tape_id, state, verdict, steps, restarts, attempts, wall_ms, tool_ms,
			ready_ms, output, error FROM tapes ORDER BY seq`)
		if err != nil {
			yield(dataset.ResultRow{}, fmt.Errorf("read %s: %w", j.path, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			var r dataset.ResultRow
			if err := rows.Scan(&r.Key, &r.TapeID, &r.State, &r.Verdict, &r.Steps, &r.Restarts, &r.Attempts,
				&r.WallMS, &r.ToolMS, &r.ReadyMS, &r.Output, &r.Error); err != nil {
				yield(r, fmt.Errorf("read %s: %w", j.path, err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(dataset.ResultRow{}, fmt.Errorf("read %s: %w", j.path, err))
		}
	}
}
