//! A small harness for ratio benchmarks: every subject and its baseline run in the same process,
//! interleaved round by round so that a noisy moment hits both, and the table printed at the end
//! gives the median of the rounds and the ratio against the target of SPEC section 12.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// What a ratio must be to meet its target.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// Latency: subject / baseline at most this.
    AtMost(f64),
    /// Throughput: subject / baseline at least this.
    AtLeast(f64),
    /// Shown for information only.
    None,
}

/// One measured thing: `run` performs `ops` operations and returns how long they took.
pub struct Subject<'a> {
    pub name: &'static str,
    pub run: Box<dyn FnMut(u64) -> Duration + 'a>,
}

impl<'a> Subject<'a> {
    pub fn new(name: &'static str, run: impl FnMut(u64) -> Duration + 'a) -> Self {
        Self {
            name,
            run: Box::new(run),
        }
    }
}

/// Median nanoseconds per operation of each subject, over `rounds` interleaved rounds of `ops`
/// operations each (after one warm-up round).
///
/// `SHARDLITE_BENCH_ONLY=text` measures only the subjects whose name contains `text` (to
/// profile one of them); `text$` only the subject named `text`; several, separated by `|`,
/// the subjects any of them picks. `SHARDLITE_BENCH_SHOW_ROUNDS=1` prints every round's value.
pub fn measure(rounds: usize, ops: u64, subjects: &mut [Subject<'_>]) -> Vec<(&'static str, f64)> {
    let only = std::env::var("SHARDLITE_BENCH_ONLY").ok();
    let chosen = |name: &str| {
        only.as_deref().is_none_or(|only| {
            only.split('|').any(|only| match only.strip_suffix('$') {
                Some(exact) => name == exact,
                None => name.contains(only),
            })
        })
    };
    for subject in subjects.iter_mut().filter(|s| chosen(s.name)) {
        (subject.run)(ops / 4 + 1);
    }
    let mut samples: Vec<Vec<f64>> = vec![vec![f64::NAN]; subjects.len()];
    for _ in 0..rounds {
        for (i, subject) in subjects.iter_mut().enumerate() {
            if !chosen(subject.name) {
                continue;
            }
            if samples[i][0].is_nan() {
                samples[i].clear();
            }
            let took = (subject.run)(ops);
            samples[i].push(took.as_nanos() as f64 / ops as f64);
        }
    }
    if std::env::var_os("SHARDLITE_BENCH_SHOW_ROUNDS").is_some() {
        for (subject, values) in subjects.iter().zip(&samples) {
            let shown: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
            eprintln!("  {:<34} rounds: {}", subject.name, shown.join(" "));
        }
    }
    subjects
        .iter()
        .zip(samples)
        .map(|(subject, mut values)| {
            values.sort_by(f64::total_cmp);
            (subject.name, values[values.len() / 2])
        })
        .collect()
}

/// Times `ops` calls of `f`.
pub fn time(ops: u64, mut f: impl FnMut(u64)) -> Duration {
    let started = Instant::now();
    for i in 0..ops {
        f(i);
    }
    started.elapsed()
}

/// Times `ops` operations spread over `threads` threads: each thread runs `f(thread index,
/// its share of the operations)`.
pub fn time_threads(threads: u64, ops: u64, f: impl Fn(u64, u64) + Sync) -> Duration {
    let per_thread = ops / threads;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..threads {
            let f = &f;
            scope.spawn(move || f(t, per_thread));
        }
    });
    started.elapsed()
}

/// The value measured for `name`.
pub fn value(results: &[(&'static str, f64)], name: &str) -> f64 {
    results.iter().find(|(n, _)| *n == name).map_or(f64::NAN, |(_, v)| *v)
}

/// Prints the header of a ratio table.
pub fn header(title: &str, unit: &str) {
    println!();
    println!("{title}");
    println!(
        "  {:<34} {:>12}   {:<26} {:>12}   {:>7}   target",
        "subject", unit, "baseline", unit, "ratio"
    );
}

/// Prints one ratio line. `values` are nanoseconds per operation; for a throughput target the
/// ratio is baseline time / subject time (that is, subject throughput / baseline throughput).
pub fn ratio_line(results: &[(&'static str, f64)], subject: &str, baseline: &str, target: Target, per_second: bool) {
    let s = value(results, subject);
    let b = value(results, baseline);
    let (shown_s, shown_b) = if per_second { (1e9 / s, 1e9 / b) } else { (s, b) };
    let (ratio, verdict, target_text) = match target {
        Target::AtMost(limit) => {
            let ratio = s / b;
            (
                ratio,
                if ratio <= limit { "met" } else { "NOT met" },
                format!("<= {limit}x"),
            )
        }
        Target::AtLeast(limit) => {
            let ratio = b / s;
            (
                ratio,
                if ratio >= limit { "met" } else { "NOT met" },
                format!(">= {limit}x"),
            )
        }
        Target::None if per_second => (b / s, "", String::new()),
        Target::None => (s / b, "", String::new()),
    };
    println!(
        "  {:<34} {:>12.1}   {:<26} {:>12.1}   {:>6.2}x   {:<8} {}",
        subject, shown_s, baseline, shown_b, ratio, target_text, verdict
    );
}

/// Rounds and operations per round, from `SHARDLITE_BENCH_ROUNDS` and `SHARDLITE_BENCH_OPS`.
pub fn settings(default_ops: u64) -> (usize, u64) {
    let rounds = std::env::var("SHARDLITE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let ops = std::env::var("SHARDLITE_BENCH_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_ops);
    (rounds, ops)
}
