//! Counters that decay exponentially, brought up to date lazily when touched: no timer runs.
//!
//! Time is counted in ticks of 1/64 s from the recorder's start, in 32 bits (about 776 days
//! before it wraps; a daemon running longer sees one decay step of the wrong length).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Ticks per second.
const TICKS_PER_SECOND: u32 = 64;

/// The recorder's clock: ticks since it started.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    started: Instant,
}

impl Clock {
    pub(super) fn new() -> Self {
        Self {
            started: Instant::now(),
        }
    }

    /// Ticks since the clock started (wrapping after about 776 days).
    pub(super) fn now(&self) -> u32 {
        let elapsed = self.started.elapsed();
        let ticks = elapsed.as_secs() * u64::from(TICKS_PER_SECOND)
            + u64::from(elapsed.subsec_nanos() / (1_000_000_000 / TICKS_PER_SECOND));
        u32::try_from(ticks % (u64::from(u32::MAX) + 1)).unwrap_or(u32::MAX)
    }
}

/// The decay: a counter loses half its value every half-life.
#[derive(Debug, Clone, Copy)]
pub(super) struct Decay {
    half_life_ticks: f64,
}

impl Decay {
    /// A decay with this half-life (at least one tick).
    pub(super) fn new(half_life: Duration) -> Self {
        Self {
            half_life_ticks: (half_life.as_secs_f64() * f64::from(TICKS_PER_SECOND)).max(1.0),
        }
    }

    /// The half-life in seconds.
    pub(super) fn half_life_seconds(&self) -> f64 {
        self.half_life_ticks / f64::from(TICKS_PER_SECOND)
    }

    /// How many half-lives lie between ticks `from` and `to` (negative when `to` is earlier).
    pub(super) fn half_lives(&self, from: u32, to: u32) -> f64 {
        (f64::from(to) - f64::from(from)) / self.half_life_ticks
    }

    /// What `value`, as of tick `from`, is worth at tick `to` (a `to` before `from` changes
    /// nothing: another thread brought the counter further already).
    pub(super) fn apply(&self, value: f64, from: u32, to: u32) -> f64 {
        if to <= from || value == 0.0 {
            return value;
        }
        value * (-f64::from(to - from) / self.half_life_ticks).exp2()
    }

    fn apply_f32(&self, value: f32, from: u32, to: u32) -> f32 {
        if to <= from || value == 0.0 {
            return value;
        }
        // The factor is in (0, 1], so the narrowing loses precision only, never range.
        let exponent = -f64::from(to - from) / self.half_life_ticks;
        value * f32_of(exponent.exp2())
    }
}

/// An `f64` in `[0, 1]` as the nearest `f32`.
fn f32_of(factor: f64) -> f32 {
    // In [0, 1] the narrowing loses precision only, never range.
    #[allow(clippy::cast_possible_truncation)]
    let narrow = factor.clamp(0.0, 1.0) as f32;
    narrow
}

/// A decaying counter in one atomic word, updated without a lock: the value as an `f32` in the
/// high half and the tick it was last brought up to date at in the low half. An `f32` keeps
/// about seven significant digits, plenty for ranking load: a count stops growing by one only
/// past sixteen million, which a bucket reaches at about two hundred thousand requests per
/// second with the default half-life.
#[derive(Debug, Default)]
pub(super) struct AtomicDecaying(AtomicU64);

fn pack(value: f32, tick: u32) -> u64 {
    u64::from(value.to_bits()) << 32 | u64::from(tick)
}

fn unpack(word: u64) -> (f32, u32) {
    let high = u32::try_from(word >> 32).unwrap_or(0);
    let low = u32::try_from(word & u64::from(u32::MAX)).unwrap_or(0);
    (f32::from_bits(high), low)
}

impl AtomicDecaying {
    /// Decays the counter to `now` and adds `amount`.
    pub(super) fn add(&self, amount: f32, now: u32, decay: &Decay) {
        let mut current = self.0.load(Ordering::Relaxed);
        loop {
            let (value, tick) = unpack(current);
            let next = pack(decay.apply_f32(value, tick, now) + amount, now.max(tick));
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// The counter's value at `now`.
    pub(super) fn value(&self, now: u32, decay: &Decay) -> f64 {
        let (value, tick) = unpack(self.0.load(Ordering::Relaxed));
        decay.apply(f64::from(value), tick, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minute() -> Decay {
        Decay::new(Duration::from_secs(60))
    }

    const MINUTE: u32 = 60 * TICKS_PER_SECOND;

    #[test]
    fn a_counter_halves_every_half_life() {
        let decay = minute();
        let counter = AtomicDecaying::default();
        counter.add(1000.0, 0, &decay);
        assert!((counter.value(0, &decay) - 1000.0).abs() < 1e-3);
        assert!((counter.value(MINUTE, &decay) - 500.0).abs() < 1e-2);
        assert!((counter.value(3 * MINUTE, &decay) - 125.0).abs() < 1e-2);
        // Adding later decays what was there first.
        counter.add(10.0, MINUTE, &decay);
        assert!((counter.value(MINUTE, &decay) - 510.0).abs() < 1e-2);
        assert!((counter.value(2 * MINUTE, &decay) - 255.0).abs() < 1e-2);
    }

    #[test]
    fn half_lives_count_both_ways() {
        let decay = minute();
        assert!((decay.half_lives(0, 3 * MINUTE) - 3.0).abs() < 1e-12);
        assert!((decay.half_lives(MINUTE, 0) + 1.0).abs() < 1e-12);
        assert!((decay.half_life_seconds() - 60.0).abs() < 1e-12);
    }

    #[test]
    fn a_steady_rate_settles_at_rate_times_mean_lifetime() {
        // One request a tick for ten half-lives: the value approaches rate × half-life / ln 2.
        let decay = minute();
        let counter = AtomicDecaying::default();
        for tick in 0..10 * MINUTE {
            counter.add(1.0, tick, &decay);
        }
        let expected = f64::from(MINUTE) / std::f64::consts::LN_2;
        let value = counter.value(10 * MINUTE, &decay);
        assert!((value - expected).abs() / expected < 0.01, "{value} vs {expected}");
    }

    #[test]
    fn an_older_tick_does_not_decay_a_newer_value() {
        let decay = minute();
        let counter = AtomicDecaying::default();
        counter.add(8.0, MINUTE, &decay);
        counter.add(2.0, 0, &decay);
        assert!((counter.value(MINUTE, &decay) - 10.0).abs() < 1e-3);
    }

    #[test]
    fn decay_factors_survive_the_narrowing() {
        assert!((f32_of(1.0) - 1.0).abs() < f32::EPSILON);
        assert!((f32_of(0.5) - 0.5).abs() < f32::EPSILON);
        assert!(f32_of(2.0) <= 1.0);
    }
}
