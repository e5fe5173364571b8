// Runs one SQL query in an in-memory DuckDB and prints each row's columns, tab-separated,
// one row a line, for the dataset tests:
//
//   node query.mjs SQL
//
// Needs @duckdb/node-api: npm ci in this folder, or NODE_PATH naming a node_modules that
// holds it.
import { DuckDBInstance } from '@duckdb/node-api';

const sql = process.argv[2];
if (!sql) {
  console.error('usage: node query.mjs SQL');
  process.exit(2);
}
const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
const conn = await instance.connect();
const reader = await conn.runAndReadAll(sql);
for (const row of reader.getRows()) {
  console.log(row.map((v) => (v === null ? 'NULL' : String(v))).join('\t'));
}
