//! `--shard auto`: which part of a sweep this process runs, told by the job scheduler that
//! started it.
//!
//! Two schedulers people run sweeps on are read:
//!
//! - a **Slurm job array** (`sbatch --array=0-7`): the part is
//!   `SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN` (divided by `SLURM_ARRAY_TASK_STEP` when the
//!   range has a step) of `SLURM_ARRAY_TASK_COUNT` parts. The array must be one range
//!   (`0-7`, `1-8`, `0-14:2`; a `%K` limit on how many run at once is fine): a list such as
//!   `1,3,7` has holes, which `SLURM_ARRAY_TASK_MAX` gives away, and is refused.
//! - a **Kubernetes Indexed Job** (`completionMode: Indexed`): the part is
//!   `JOB_COMPLETION_INDEX` of [`SHARD_COUNT_VAR`] (`JITTERLAB_SHARD_COUNT`) parts. Kubernetes
//!   sets the index but has no variable for the number of completions, so the Job's manifest
//!   sets `JITTERLAB_SHARD_COUNT` to its `completions` (deploy/k8s-sweep-job.yaml).
//!
//! Slurm's variables are looked at first. Anything missing, not a whole number or out of
//! range is an [`Error::ShardEnv`] naming the variable and its value.
//!
//! [`shard_from_env`] takes the lookup as a closure, so it can be tested without touching the
//! process environment; [`shard_from_process_env`] reads the real one.

use crate::Error;
use crate::sweep::Shard;

/// Slurm: this task's ID in the job array.
pub const SLURM_ID_VAR: &str = "SLURM_ARRAY_TASK_ID";
/// Slurm: how many tasks the job array has.
pub const SLURM_COUNT_VAR: &str = "SLURM_ARRAY_TASK_COUNT";
/// Slurm: the job array's lowest task ID.
pub const SLURM_MIN_VAR: &str = "SLURM_ARRAY_TASK_MIN";
/// Slurm: the job array's highest task ID (checked when set).
pub const SLURM_MAX_VAR: &str = "SLURM_ARRAY_TASK_MAX";
/// Slurm: the step between task IDs (1 when unset).
pub const SLURM_STEP_VAR: &str = "SLURM_ARRAY_TASK_STEP";
/// Kubernetes Indexed Job: this pod's completion index, `0..completions`.
pub const K8S_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// The number of parts beside [`K8S_INDEX_VAR`]: set by the Job's manifest to its
/// `completions`, since Kubernetes exposes no variable for it.
pub const SHARD_COUNT_VAR: &str = "JITTERLAB_SHARD_COUNT";

/// The shard the scheduler's variables name, read through `lookup` (a variable's value, or
/// `None` when it is unset).
///
/// # Errors
/// [`Error::ShardEnv`]: no scheduler's variables are set, one that is needed is missing, a
/// value is not a whole number, or the values disagree (an ID below the minimum, an index at
/// or past the count, a count of zero, an array that is not one range).
pub fn shard_from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Shard, Error> {
    if let Some(id) = lookup(SLURM_ID_VAR) {
        return slurm(&lookup, &id);
    }
    if let Some(index) = lookup(K8S_INDEX_VAR) {
        let index = number(K8S_INDEX_VAR, &index)?;
        let count = required(&lookup, SHARD_COUNT_VAR, &format!("beside {K8S_INDEX_VAR}"))?;
        return checked(index, K8S_INDEX_VAR, count, SHARD_COUNT_VAR);
    }
    Err(Error::ShardEnv {
        variable: SLURM_ID_VAR.to_owned(),
        reason: format!(
            "is not set, nor {K8S_INDEX_VAR}: run it in a Slurm job array (sbatch --array) \
             or a Kubernetes Indexed Job (with {SHARD_COUNT_VAR}), or give --shard I/N"
        ),
    })
}

/// [`shard_from_env`] over this process's environment.
///
/// # Errors
/// As [`shard_from_env`].
pub fn shard_from_process_env() -> Result<Shard, Error> {
    shard_from_env(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

/// A Slurm array task's shard, its ID being `id`.
fn slurm(lookup: &impl Fn(&str) -> Option<String>, id: &str) -> Result<Shard, Error> {
    let beside = format!("beside {SLURM_ID_VAR}");
    let id = number(SLURM_ID_VAR, id)?;
    let count = required(lookup, SLURM_COUNT_VAR, &beside)?;
    let min = required(lookup, SLURM_MIN_VAR, &beside)?;
    let step = match lookup(SLURM_STEP_VAR) {
        Some(s) => number(SLURM_STEP_VAR, &s)?,
        None => 1,
    };
    if step == 0 {
        return Err(bad(SLURM_STEP_VAR, "0", "a step of zero"));
    }
    if id < min {
        return Err(bad(
            SLURM_ID_VAR,
            &id.to_string(),
            &format!("below {SLURM_MIN_VAR}={min}"),
        ));
    }
    if (id - min) % step != 0 {
        return Err(bad(
            SLURM_ID_VAR,
            &id.to_string(),
            &format!("not {SLURM_MIN_VAR}={min} plus a multiple of {SLURM_STEP_VAR}={step}"),
        ));
    }
    let shard = checked((id - min) / step, SLURM_ID_VAR, count, SLURM_COUNT_VAR)?;
    // One range of `count` IDs ends at min + (count − 1) × step; a list with holes does not.
    if let Some(max) = lookup(SLURM_MAX_VAR) {
        let max = number(SLURM_MAX_VAR, &max)?;
        let end = (count - 1)
            .checked_mul(step)
            .and_then(|span| span.checked_add(min));
        if end != Some(max) {
            return Err(bad(
                SLURM_MAX_VAR,
                &max.to_string(),
                &format!(
                    "the array is not one range: {count} tasks from {min} by {step} \
                     end at {}; use --array=A-B[:STEP]",
                    end.map_or_else(|| "overflow".to_owned(), |e| e.to_string())
                ),
            ));
        }
    }
    Ok(shard)
}

/// `index` of `count` parts, both read from the variables named.
fn checked(index: usize, index_var: &str, count: usize, count_var: &str) -> Result<Shard, Error> {
    if count == 0 {
        return Err(bad(count_var, "0", "no parts"));
    }
    if index >= count {
        return Err(bad(
            index_var,
            &index.to_string(),
            &format!("the index is not below {count_var}={count}"),
        ));
    }
    Ok(Shard { index, count })
}

/// A variable that must be set, parsed as a whole number; `why` says beside what.
fn required(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &str,
    why: &str,
) -> Result<usize, Error> {
    match lookup(name) {
        Some(v) => number(name, &v),
        None => Err(Error::ShardEnv {
            variable: name.to_owned(),
            reason: format!("is not set ({why})"),
        }),
    }
}

/// A variable's value as a whole number.
fn number(name: &str, value: &str) -> Result<usize, Error> {
    value
        .trim()
        .parse()
        .map_err(|_| bad(name, value, "not a whole number"))
}

fn bad(variable: &str, value: &str, reason: &str) -> Error {
    Error::ShardEnv {
        variable: variable.to_owned(),
        reason: format!("is '{value}': {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `shard_from_env` over the given variables only.
    fn from(vars: &[(&str, &str)]) -> Result<Shard, Error> {
        shard_from_env(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    /// The error's variable and its whole message.
    fn error(vars: &[(&str, &str)]) -> (String, String) {
        let e = from(vars).expect_err("the variables are refused");
        match &e {
            Error::ShardEnv { variable, .. } => (variable.clone(), e.to_string()),
            other => panic!("expected a ShardEnv error for {vars:?}, got {other:?}"),
        }
    }

    fn shard(index: usize, count: usize) -> Shard {
        Shard { index, count }
    }

    #[test]
    fn slurm_index_is_the_id_above_the_minimum() {
        let vars = |id| {
            [
                (SLURM_ID_VAR, id),
                (SLURM_COUNT_VAR, "4"),
                (SLURM_MIN_VAR, "0"),
                (SLURM_MAX_VAR, "3"),
            ]
        };
        for (id, index) in [("0", 0), ("1", 1), ("3", 3)] {
            assert_eq!(from(&vars(id)).unwrap(), shard(index, 4));
        }
        // An array from 1 (`--array=1-8`): task 1 is the first part.
        let one_based = |id| {
            [
                (SLURM_ID_VAR, id),
                (SLURM_COUNT_VAR, "8"),
                (SLURM_MIN_VAR, "1"),
            ]
        };
        assert_eq!(from(&one_based("1")).unwrap(), shard(0, 8));
        assert_eq!(from(&one_based("8")).unwrap(), shard(7, 8));
        assert_eq!(from(&one_based(" 5 ")).unwrap(), shard(4, 8));
    }

    #[test]
    fn slurm_steps_divide_the_offset() {
        // `--array=10-16:2`: IDs 10, 12, 14, 16.
        let vars = |id| {
            [
                (SLURM_ID_VAR, id),
                (SLURM_COUNT_VAR, "4"),
                (SLURM_MIN_VAR, "10"),
                (SLURM_MAX_VAR, "16"),
                (SLURM_STEP_VAR, "2"),
            ]
        };
        assert_eq!(from(&vars("10")).unwrap(), shard(0, 4));
        assert_eq!(from(&vars("14")).unwrap(), shard(2, 4));
        assert_eq!(from(&vars("16")).unwrap(), shard(3, 4));
        let (var, msg) = error(&vars("13"));
        assert_eq!(var, SLURM_ID_VAR);
        assert!(msg.contains("multiple of SLURM_ARRAY_TASK_STEP=2"), "{msg}");
        let mut zero = vars("10");
        zero[4].1 = "0";
        assert_eq!(error(&zero).0, SLURM_STEP_VAR);
    }

    #[test]
    fn kubernetes_index_with_the_documented_count() {
        let vars = |i| [(K8S_INDEX_VAR, i), (SHARD_COUNT_VAR, "3")];
        assert_eq!(from(&vars("0")).unwrap(), shard(0, 3));
        assert_eq!(from(&vars("2")).unwrap(), shard(2, 3));
        let (var, msg) = error(&vars("3"));
        assert_eq!(var, K8S_INDEX_VAR);
        assert!(msg.contains("not below JITTERLAB_SHARD_COUNT=3"), "{msg}");
    }

    #[test]
    fn slurm_is_read_before_kubernetes() {
        let vars = [
            (K8S_INDEX_VAR, "0"),
            (SHARD_COUNT_VAR, "2"),
            (SLURM_ID_VAR, "5"),
            (SLURM_COUNT_VAR, "6"),
            (SLURM_MIN_VAR, "0"),
        ];
        assert_eq!(from(&vars).unwrap(), shard(5, 6));
    }

    #[test]
    fn nothing_set_names_both_schedulers() {
        let (var, msg) = error(&[]);
        assert_eq!(var, SLURM_ID_VAR);
        assert!(msg.contains("JOB_COMPLETION_INDEX"), "{msg}");
        assert!(msg.contains("--shard I/N"), "{msg}");
        assert!(!msg.contains('\n'), "one line: {msg}");
        // The count alone is no index.
        assert_eq!(error(&[(SHARD_COUNT_VAR, "4")]).0, SLURM_ID_VAR);
    }

    #[test]
    fn each_missing_variable_is_named() {
        let (var, msg) = error(&[(SLURM_ID_VAR, "1"), (SLURM_MIN_VAR, "0")]);
        assert_eq!(var, SLURM_COUNT_VAR);
        assert!(
            msg.contains("SLURM_ARRAY_TASK_COUNT") && msg.contains("not set"),
            "{msg}"
        );
        let (var, _) = error(&[(SLURM_ID_VAR, "1"), (SLURM_COUNT_VAR, "2")]);
        assert_eq!(var, SLURM_MIN_VAR);
        let (var, msg) = error(&[(K8S_INDEX_VAR, "1")]);
        assert_eq!(var, SHARD_COUNT_VAR);
        assert!(msg.contains("beside JOB_COMPLETION_INDEX"), "{msg}");
    }

    #[test]
    fn each_variable_must_be_a_whole_number() {
        let slurm = [
            (SLURM_ID_VAR, "2"),
            (SLURM_COUNT_VAR, "4"),
            (SLURM_MIN_VAR, "0"),
            (SLURM_MAX_VAR, "3"),
            (SLURM_STEP_VAR, "1"),
        ];
        for at in 0..slurm.len() {
            for junk in ["x", "", "-1", "1.5", "4294967296999999999999"] {
                let mut vars = slurm;
                vars[at].1 = junk;
                let (var, msg) = error(&vars);
                assert_eq!(var, slurm[at].0, "{junk:?}");
                assert!(
                    msg.contains(&format!("is '{junk}': not a whole number")),
                    "{msg}"
                );
            }
        }
        let k8s = [(K8S_INDEX_VAR, "1"), (SHARD_COUNT_VAR, "2")];
        for at in 0..k8s.len() {
            let mut vars = k8s;
            vars[at].1 = "two";
            assert_eq!(error(&vars).0, k8s[at].0);
        }
    }

    #[test]
    fn inconsistent_values_are_refused() {
        // An ID below the minimum.
        let (var, msg) = error(&[
            (SLURM_ID_VAR, "0"),
            (SLURM_COUNT_VAR, "4"),
            (SLURM_MIN_VAR, "1"),
        ]);
        assert_eq!(var, SLURM_ID_VAR);
        assert!(msg.contains("below SLURM_ARRAY_TASK_MIN=1"), "{msg}");
        // An index at the count.
        let (var, msg) = error(&[
            (SLURM_ID_VAR, "4"),
            (SLURM_COUNT_VAR, "4"),
            (SLURM_MIN_VAR, "0"),
        ]);
        assert_eq!(var, SLURM_ID_VAR);
        assert!(msg.contains("not below SLURM_ARRAY_TASK_COUNT=4"), "{msg}");
        // No parts at all.
        let (var, _) = error(&[(K8S_INDEX_VAR, "0"), (SHARD_COUNT_VAR, "0")]);
        assert_eq!(var, SHARD_COUNT_VAR);
        // A list with holes (`--array=1,3,7`: 3 tasks, 1 to 7).
        let (var, msg) = error(&[
            (SLURM_ID_VAR, "3"),
            (SLURM_COUNT_VAR, "3"),
            (SLURM_MIN_VAR, "1"),
            (SLURM_MAX_VAR, "7"),
        ]);
        assert_eq!(var, SLURM_MAX_VAR);
        assert!(msg.contains("not one range"), "{msg}");
    }

    #[test]
    fn errors_name_the_flag_and_the_variable_in_one_line() {
        let e = from(&[(K8S_INDEX_VAR, "x"), (SHARD_COUNT_VAR, "2")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--shard auto: JOB_COMPLETION_INDEX is 'x': not a whole number"
        );
    }
}
