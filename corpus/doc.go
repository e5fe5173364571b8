// Package corpus replays a collection of tapes (a folder of tape files or an exported
// dataset) N at a time, each in a fresh sandbox, and keeps a journal of the run in a SQLite
// file so that a killed run resumes where it stopped: finished tapes are kept, interrupted
// ones are redone from scratch. The results table goes beside the journal as Parquet.
package corpus
