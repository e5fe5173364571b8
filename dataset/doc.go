// Package dataset turns tapes into a dataset in the layout Hugging Face expects, and back.
//
// Export writes a folder that can be pushed to the Hub as it is: tables (configs), tapes
// (one row per tape, with the whole tape as its canonical JSON), steps (one row per model
// call, holding only what is new in it) and workspaces (one row per start snapshot the
// tapes name, stored once per digest), as zstd Parquet shards
// data/<config>/<split>-NNNNN-of-MMMMM.parquet and optionally Arrow IPC streams beside
// them, plus README.md, a dataset card whose YAML describes the files (merged into on a
// later export: its author's fields and text stay). Every tape is
// validated against the tape schema on the way in, and its start snapshot against its
// digest; memory stays bounded whatever the corpus size. Import rebuilds every tape file
// byte for byte from the tapes table, with its start snapshot beside it. Validate checks
// a dataset folder: the card against the files, every row against its tape, every tape
// against the schema, every snapshot against its digest.
//
// Arrow and Parquet live only in this package.
package dataset
