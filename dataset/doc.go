// Package dataset turns tapes into a dataset in the layout Hugging Face expects, and back.
//
// Export writes a folder that can be pushed to the Hub as it is: two tables (configs),
// tapes (one row per tape, with the whole tape as its canonical JSON) and steps (one row
// per model call, holding only what is new in it), as zstd Parquet shards
// data/<config>/<split>-NNNNN-of-MMMMM.parquet and optionally Arrow IPC streams beside
// them, plus README.md, a dataset card whose YAML describes the files. Every tape is
// validated against the tape schema on the way in; memory stays bounded whatever the
// corpus size. Import rebuilds every tape file byte for byte from the tapes table.
// Validate checks a dataset folder: the card against the files, every row against its
// tape, every tape against the schema.
//
// Arrow and Parquet live only in this package.
package dataset
