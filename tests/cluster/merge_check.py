"""Checks a sweep's shards, merged by plain concatenation, equal the unsharded sweep.

Usage: merge_check.py WHOLE.parquet COUNT PART.parquet...

The parts are concatenated as they are (polars `concat(how="vertical")`, which needs one
schema, and DuckDB's `read_parquet` over the list); the merge must hold the same rows as the
whole sweep, every column equal but `shard`, in any order. Every part's rows name its shard
(`I/COUNT`, each I once) and the whole sweep's `1/1`; all carry the same tool version, frame
rate and clock mapping. Run by tests/cluster/slurm_sweep.sh.
"""

import sys

import duckdb
import polars as pl
from polars.testing import assert_frame_equal

PROVENANCE = ["shard", "jitterlab_version", "fps", "clock"]


def main() -> None:
    whole_path, count, parts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if len(parts) != count:
        sys.exit(f"{len(parts)} parts for {count} shards")
    whole = pl.read_parquet(whole_path)
    frames = [pl.read_parquet(p) for p in parts]
    for path, frame in zip(parts, frames):
        missing = [c for c in PROVENANCE if c not in frame.columns]
        if missing:
            sys.exit(f"{path}: no {', '.join(missing)} column")
        if frame.height == 0:
            sys.exit(f"{path}: no rows")
        if frame["shard"].n_unique() != 1:
            sys.exit(f"{path}: rows of several shards: {frame['shard'].unique().to_list()}")
    shards = sorted(f["shard"][0] for f in frames)
    expected = sorted(f"{i}/{count}" for i in range(1, count + 1))
    if shards != expected:
        sys.exit(f"shards {shards}, expected {expected}")
    if whole["shard"].unique().to_list() != ["1/1"]:
        sys.exit(f"{whole_path}: shard {whole['shard'].unique().to_list()}, expected 1/1")

    # A plain concatenation: one schema, no reshaping.
    merged = pl.concat(frames, how="vertical")
    if merged.schema != whole.schema:
        sys.exit(f"schemas differ:\n merged {merged.schema}\n whole  {whole.schema}")
    for column in ["jitterlab_version", "fps", "clock"]:
        values = pl.concat([merged[column], whole[column]]).unique().to_list()
        if len(values) != 1:
            sys.exit(f"{column}: several values {values}")
    key = ["trace", "config"]
    if merged.select(key).is_duplicated().any():
        sys.exit("shards overlap: a (trace, config) in two parts")
    a = merged.drop("shard").sort(key)
    b = whole.drop("shard").sort(key)
    assert_frame_equal(a, b, check_exact=True)

    # The same merge in DuckDB, straight from the files.
    con = duckdb.connect()
    part_list = "[" + ", ".join(f"'{p}'" for p in parts) + "]"
    n_merged = con.execute(f"SELECT count(*) FROM read_parquet({part_list})").fetchone()[0]
    for x, y in [(part_list, f"'{whole_path}'"), (f"'{whole_path}'", part_list)]:
        extra = con.execute(
            f"SELECT count(*) FROM (SELECT * EXCLUDE (shard) FROM read_parquet({x}) "
            f"EXCEPT ALL SELECT * EXCLUDE (shard) FROM read_parquet({y}))"
        ).fetchone()[0]
        if extra:
            sys.exit(f"DuckDB: {extra} rows of {x} not in {y}")
    if n_merged != whole.height:
        sys.exit(f"DuckDB: {n_merged} merged rows, {whole.height} whole")
    print(
        f"merged {count} shards ({', '.join(str(f.height) for f in frames)} rows): "
        f"{merged.height} rows, {len(merged.columns)} columns, equal to the unsharded sweep "
        f"(polars and DuckDB); version {whole['jitterlab_version'][0]}"
    )


if __name__ == "__main__":
    main()
