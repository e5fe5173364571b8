// DuckDB peer for the export benchmark: read every tape of a directory with read_json and
// write one zstd Parquet file, with 2 threads, as issue 7 describes.
//
//   node duckdb.mjs CORPUS_DIR OUT.parquet [THREADS]
//
// Needs @duckdb/node-api (compare.sh installs it outside the repository).
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, out, threads = '2'] = process.argv.slice(2);
if (!dir || !out) {
  console.error('usage: node duckdb.mjs CORPUS_DIR OUT.parquet [THREADS]');
  process.exit(2);
}
const instance = await DuckDBInstance.create(':memory:', { threads });
const conn = await instance.connect();
const start = process.hrtime.bigint();
await conn.run(`COPY (SELECT * FROM read_json('${dir}/*.json')) TO '${out}' (FORMAT parquet, COMPRESSION zstd)`);
const secs = Number(process.hrtime.bigint() - start) / 1e9;
console.log(`duckdb: ${secs.toFixed(2)} s`);
