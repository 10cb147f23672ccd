//! `sweep --shard auto` as a Slurm job array task and a Kubernetes Indexed Job pod would run
//! it (the scheduler's variables set in the child's environment only), the provenance every
//! row carries, and the Kubernetes manifest in deploy/ (its names the ones the code reads, its
//! command run once per index). The real Slurm cluster is tests/cluster/slurm_sweep.sh's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jitterlab_replay::shard::{
    K8S_INDEX_VAR, SHARD_COUNT_VAR, SLURM_COUNT_VAR, SLURM_ID_VAR, SLURM_MAX_VAR, SLURM_MIN_VAR,
    SLURM_STEP_VAR,
};
use serde_json::Value;

use crate::util::{fixtures, jitterlab};

const SCHEDULER_VARS: [&str; 7] = [
    SLURM_ID_VAR,
    SLURM_COUNT_VAR,
    SLURM_MIN_VAR,
    SLURM_MAX_VAR,
    SLURM_STEP_VAR,
    K8S_INDEX_VAR,
    SHARD_COUNT_VAR,
];

fn demo() -> PathBuf {
    fixtures().join("traces/demo-wifi-20hz.jtr")
}

/// `jitterlab sweep` with only the scheduler variables given (none inherited from a
/// scheduler that runs these tests).
fn sweep(vars: &[(&str, &str)]) -> assert_cmd::Command {
    let mut cmd = jitterlab();
    for var in SCHEDULER_VARS {
        cmd.env_remove(var);
    }
    cmd.envs(vars.iter().copied()).arg("sweep");
    cmd
}

const GRID: [&str; 4] = [
    "--sweep",
    "fixed:delay=0..150ms/30ms",
    "--sweep",
    "ngo:ticks_ago=1|2",
];

/// The JSON rows of a sweep of the demo trace over [`GRID`] with `extra` flags.
fn rows(dir: &Path, name: &str, vars: &[(&str, &str)], extra: &[&str]) -> Vec<Value> {
    let out = dir.join(name);
    let res = sweep(vars)
        .arg(demo())
        .args(GRID)
        .args(extra)
        .arg("-q")
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        res.status.success(),
        "{vars:?} {extra:?}: {}",
        String::from_utf8_lossy(&res.stderr)
    );
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// The rows by (trace, config), without the `shard` column.
fn keyed(rows: Vec<Value>) -> BTreeMap<(String, u64), Value> {
    rows.into_iter()
        .map(|mut r| {
            let key = (
                r["trace"].as_str().unwrap().to_owned(),
                r["config"].as_u64().unwrap(),
            );
            r.as_object_mut().unwrap().remove("shard");
            (key, r)
        })
        .collect()
}

/// What `jitterlab --version` prints after the name.
fn version() -> String {
    let out = jitterlab().arg("--version").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.trim().strip_prefix("jitterlab ").unwrap().to_owned()
}

#[test]
fn shard_auto_runs_the_shard_a_slurm_array_or_an_indexed_job_names() {
    let dir = tempfile::tempdir().unwrap();
    let whole = rows(dir.path(), "whole.json", &[], &[]);
    assert_eq!(whole.len(), 8);
    assert!(whole.iter().all(|r| r["shard"] == "1/1"), "{:?}", whole[0]);
    let count = 3;
    let mut merged = BTreeMap::new();
    for index in 0..count {
        let explicit = rows(
            dir.path(),
            &format!("explicit{index}.json"),
            &[],
            &["--shard", &format!("{}/{count}", index + 1)],
        );
        assert!(!explicit.is_empty());
        // `sbatch --array=5-7`: the task IDs start at 5.
        let id = (5 + index).to_string();
        let slurm = [
            (SLURM_ID_VAR, id.as_str()),
            (SLURM_COUNT_VAR, "3"),
            (SLURM_MIN_VAR, "5"),
            (SLURM_MAX_VAR, "7"),
        ];
        let k8s_index = index.to_string();
        let k8s = [(K8S_INDEX_VAR, k8s_index.as_str()), (SHARD_COUNT_VAR, "3")];
        for (name, vars) in [("slurm", &slurm[..]), ("k8s", &k8s[..])] {
            let auto = rows(
                dir.path(),
                &format!("{name}{index}.json"),
                vars,
                &["--shard", "auto"],
            );
            // The same rows as --shard I/N, their `shard` column included.
            assert_eq!(auto, explicit, "{name} task {index}");
            let shard = format!("{}/{count}", index + 1);
            assert!(auto.iter().all(|r| r["shard"] == shard.as_str()), "{name}");
        }
        for (k, v) in keyed(explicit) {
            assert!(merged.insert(k, v).is_none(), "shards overlap");
        }
    }
    assert_eq!(merged, keyed(whole), "the shards concatenate to the whole");
}

#[test]
fn shard_auto_without_a_scheduler_or_with_bad_values_is_one_line_naming_the_variable() {
    let cases: [(&[(&str, &str)], &str); 7] = [
        (
            &[],
            "SLURM_ARRAY_TASK_ID is not set, nor JOB_COMPLETION_INDEX",
        ),
        (
            &[
                (SLURM_ID_VAR, "x"),
                (SLURM_COUNT_VAR, "4"),
                (SLURM_MIN_VAR, "0"),
            ],
            "SLURM_ARRAY_TASK_ID is 'x': not a whole number",
        ),
        (
            &[(SLURM_ID_VAR, "1"), (SLURM_MIN_VAR, "0")],
            "SLURM_ARRAY_TASK_COUNT is not set",
        ),
        (
            &[
                (SLURM_ID_VAR, "1"),
                (SLURM_COUNT_VAR, "4"),
                (SLURM_MIN_VAR, "2"),
            ],
            "SLURM_ARRAY_TASK_ID is '1': below SLURM_ARRAY_TASK_MIN=2",
        ),
        (
            &[
                (SLURM_ID_VAR, "4"),
                (SLURM_COUNT_VAR, "4"),
                (SLURM_MIN_VAR, "0"),
            ],
            "SLURM_ARRAY_TASK_ID is '4': the index is not below SLURM_ARRAY_TASK_COUNT=4",
        ),
        (&[(K8S_INDEX_VAR, "0")], "JITTERLAB_SHARD_COUNT is not set"),
        (
            &[(K8S_INDEX_VAR, "0"), (SHARD_COUNT_VAR, "eight")],
            "JITTERLAB_SHARD_COUNT is 'eight': not a whole number",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rows.parquet");
    for (vars, says) in cases {
        // Refused before any trace is read: the trace does not exist.
        let res = sweep(vars)
            .args([
                "nope.jtr",
                "--sweep",
                "fixed:delay=50ms",
                "--shard",
                "auto",
                "-o",
            ])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(2), "{vars:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{vars:?}: {err}");
        assert!(
            err.starts_with("error: --shard auto: ") && err.contains(says),
            "{vars:?}: {err}"
        );
        assert!(!err.contains("nope.jtr"), "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn rows_record_the_shard_version_frame_rate_and_clock_mapping() {
    let dir = tempfile::tempdir().unwrap();
    let version = version();
    assert!(
        version.contains('('),
        "the version names its commit: {version}"
    );
    let json = rows(
        dir.path(),
        "rows.json",
        &[(K8S_INDEX_VAR, "1"), (SHARD_COUNT_VAR, "2")],
        &["--shard", "auto", "--fps", "30", "--clock", "hindsight"],
    );
    assert!(!json.is_empty());
    for row in &json {
        assert_eq!(row["shard"], "2/2");
        assert_eq!(row["jitterlab_version"], version.as_str());
        assert_eq!(row["fps"], 30.0);
        assert_eq!(row["clock"], "hindsight");
    }
    // The last columns, in Parquet too (typed), and CSV.
    let parquet = dir.path().join("rows.parquet");
    sweep(&[])
        .arg(demo())
        .args(GRID)
        .args(["--clock", "offset=12.5", "--shard", "1/3", "-q", "-o"])
        .arg(&parquet)
        .assert()
        .success();
    use polars::prelude::*;
    let df = ParquetReader::new(std::fs::File::open(&parquet).unwrap())
        .finish()
        .unwrap();
    let names: Vec<String> = df
        .get_column_names()
        .iter()
        .map(|n| n.to_string())
        .collect();
    assert_eq!(
        names[names.len() - 4..],
        ["shard", "jitterlab_version", "fps", "clock"]
    );
    assert_eq!(df.column("fps").unwrap().dtype(), &DataType::Float64);
    let cell = |c: &str| {
        df.column(c)
            .unwrap()
            .get(0)
            .unwrap()
            .str_value()
            .to_string()
    };
    assert_eq!(cell("shard"), "1/3");
    assert_eq!(cell("jitterlab_version"), version);
    assert_eq!(cell("fps"), "60.0");
    assert_eq!(cell("clock"), "offset=12.5");
    let csv = dir.path().join("rows.csv");
    sweep(&[])
        .arg(demo())
        .args(GRID)
        .args(["-q", "-o"])
        .arg(&csv)
        .assert()
        .success();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .ends_with(",shard,jitterlab_version,fps,clock"),
        "{text}"
    );
}

/// deploy/k8s-sweep-job.yaml: an Indexed Job whose count variable is the one the code reads
/// and equals its completions; its command, run once per index as its pods would run it
/// (`/data` a temporary directory, this jitterlab on the PATH), makes parts that concatenate
/// to the whole sweep.
#[cfg(unix)]
#[test]
fn the_kubernetes_manifest_names_what_the_code_reads_and_its_pods_make_every_shard() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/k8s-sweep-job.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let field = |key: &str| -> &str {
        let prefix = format!("{key}:");
        let found: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .map(str::trim)
            .collect();
        assert_eq!(found.len(), 1, "{key} in {}", path.display());
        found[0]
    };
    assert_eq!(field("kind"), "Job");
    assert_eq!(field("completionMode"), "Indexed");
    let completions: usize = field("completions").parse().unwrap();
    let parallelism: usize = field("parallelism").parse().unwrap();
    assert!(completions >= 2 && (1..=completions).contains(&parallelism));
    // The count variable, and its value the completions.
    let at = lines
        .iter()
        .position(|l| *l == format!("- name: {SHARD_COUNT_VAR}"))
        .unwrap_or_else(|| panic!("no {SHARD_COUNT_VAR} in {}", path.display()));
    assert_eq!(lines[at + 1], format!("value: \"{completions}\""));
    // The command: a flow sequence of quoted strings, which is JSON.
    let command: Vec<String> = serde_json::from_str(field("command")).unwrap();
    assert_eq!(command[..2], ["sh", "-c"]);
    let script = &command[2];
    assert!(script.contains("--shard auto"), "{script}");
    assert!(script.contains(&format!("${K8S_INDEX_VAR}")), "{script}");

    // The pods, one after the other, on a /data of our own.
    let data = tempfile::tempdir().unwrap();
    let root = data.path().to_str().unwrap();
    std::fs::create_dir(data.path().join("traces")).unwrap();
    std::fs::copy(demo(), data.path().join("traces/demo.jtr")).unwrap();
    std::fs::write(
        data.path().join("grid.toml"),
        "[fixed]\ndelay = \"0ms..150ms step 30ms\"\n[ngo]\nticks_ago = [1, 2]\n",
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("jitterlab");
    let search = std::env::join_paths(std::iter::once(bin.parent().unwrap().to_owned()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let pod_script = script.replace("/data", root);
    for index in 0..completions {
        let mut pod = std::process::Command::new("sh");
        for var in SCHEDULER_VARS {
            pod.env_remove(var);
        }
        let res = pod
            .args(["-c", &pod_script])
            .env("PATH", &search)
            .env(K8S_INDEX_VAR, index.to_string())
            .env(SHARD_COUNT_VAR, completions.to_string())
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "pod {index}: {}",
            String::from_utf8_lossy(&res.stderr)
        );
    }
    // The parts, concatenated as they are (one schema), are the whole sweep.
    use polars::prelude::*;
    let read = |path: &Path| {
        ParquetReader::new(std::fs::File::open(path).unwrap())
            .finish()
            .unwrap()
    };
    let whole = data.path().join("whole.parquet");
    sweep(&[])
        .arg(data.path().join("traces/demo.jtr"))
        .arg("--grid")
        .arg(data.path().join("grid.toml"))
        .args(["-q", "-o"])
        .arg(&whole)
        .assert()
        .success();
    let whole = read(&whole);
    let mut merged: Option<DataFrame> = None;
    for index in 0..completions {
        let part = read(&data.path().join(format!("rows/part_{index}.parquet")));
        assert!(part.height() > 0, "pod {index} made no rows");
        let shard = part.column("shard").unwrap().get(0).unwrap();
        assert_eq!(
            shard.str_value(),
            format!("{}/{completions}", index + 1).as_str()
        );
        merged = Some(match merged {
            None => part,
            Some(mut m) => {
                m.vstack_mut(&part).unwrap();
                m
            }
        });
    }
    let canonical = |df: DataFrame| {
        df.drop("shard")
            .unwrap()
            .sort(["trace", "config"], SortMultipleOptions::default())
            .unwrap()
    };
    let (merged, whole) = (canonical(merged.unwrap()), canonical(whole));
    assert_eq!(merged.schema(), whole.schema());
    assert!(merged.equals_missing(&whole), "{merged}\n{whole}");
}
