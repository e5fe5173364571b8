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
// This package holds the rows and the files (Parquet, Arrow, the card); it reads and
// writes tapes only through package tape: tape.Decode gives a tape with its canonical
// encoding (the file's own bytes when canonical, as tapes TapeBox writes are, chunk data
// left out since the rows only count chunks), and tape.IsCanonical checks a stored
// tape_json against its tape.
//
// Arrow and Parquet live only in this package.
package dataset
