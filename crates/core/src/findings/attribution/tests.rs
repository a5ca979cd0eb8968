use super::*;
use crate::findings::minutes::{at as t, per_minute as series};

/// One group's series, per minute: the alarm's statistic, requests, and
/// quantile knots derived from the statistic (p50 = value / 2, p99 = 3 x, max = 6 x).
struct Group {
    value: MetricSeries,
    requests: MetricSeries,
    p50: MetricSeries,
    p99: MetricSeries,
    maximum: MetricSeries,
}

fn group(values: &[f64], requests: &[f64]) -> Group {
    let scaled = |k: f64| series(&values.iter().map(|v| v * k).collect::<Vec<_>>());
    Group {
        value: series(values),
        requests: series(requests),
        p50: scaled(0.5),
        p99: scaled(3.0),
        maximum: scaled(6.0),
    }
}

/// A group for a percentile alarm: its p50, the alarm's percentile (= p99 here) and max.
fn tail_group(p50: &[f64], p99: &[f64], requests: &[f64]) -> Group {
    Group {
        value: series(p99),
        requests: series(requests),
        p50: series(p50),
        p99: series(p99),
        maximum: series(&p99.iter().map(|v| v * 2.0).collect::<Vec<_>>()),
    }
}

fn steady(value: f64, minutes: usize) -> Vec<f64> {
    vec![value; minutes]
}

/// `base` for `minutes` minutes, `burst` from minute `from` on.
fn step(base: f64, burst: f64, from: usize, minutes: usize) -> Vec<f64> {
    (0..minutes)
        .map(|m| if m >= from { burst } else { base })
        .collect()
}

fn minutes(range: std::ops::Range<i64>) -> Vec<DateTime<Utc>> {
    range.map(t).collect()
}

fn question<'a>(
    groups: &'a [Group],
    breach: &'a [DateTime<Utc>],
    combination: Combination,
    threshold: f64,
    comparison: Comparison,
) -> Question<'a> {
    Question {
        groups: groups
            .iter()
            .map(|g| GroupSeries {
                value: &g.value,
                requests: &g.requests,
                p50: &g.p50,
                p99: &g.p99,
                maximum: &g.maximum,
            })
            .collect(),
        observed: None,
        breach,
        combination,
        threshold,
        comparison,
    }
}

fn ask(groups: &[Group], breach: &[DateTime<Utc>], statistic: &str, threshold: f64) -> Attribution {
    let q = question(
        groups,
        breach,
        Combination::of(&Statistic::parse(statistic)),
        threshold,
        Comparison::GreaterThan,
    );
    attribute(&q).expect("enough periods for a baseline")
}

const MINUTES: usize = 40;

#[test]
fn the_group_whose_latency_rose_is_the_culprit_and_its_baseline_brings_the_average_back() {
    let groups = [
        group(&step(0.1, 3.0, 30, MINUTES), &steady(400.0, MINUTES)),
        group(&steady(0.06, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.08, MINUTES), &steady(200.0, MINUTES)),
    ];
    let a = ask(&groups, &minutes(30..40), "Average", 0.8);
    assert_eq!(a.outcome, Outcome::Culprits);
    assert_eq!(a.culprits, [0]);
    assert!(a.sufficient);
    assert!(a.counterfactual.unwrap() < 0.8, "{a:?}");
    assert!(a.observed.unwrap() > 0.8);
    assert_eq!(a.baseline.source, BaselineSource::CalmPeriods);
    assert_eq!(a.baseline.periods, 30);
    assert_eq!(a.shares()[0], 1.0);
}

#[test]
fn a_group_always_above_a_p99_threshold_with_a_tiny_share_is_standing_not_the_culprit() {
    // A report endpoint: p99 5 s for hours, 0.3 % of the requests. The API's tail rose.
    let report = tail_group(
        &steady(2.0, MINUTES),
        &steady(5.0, MINUTES),
        &steady(3.0, MINUTES),
    );
    let api = tail_group(
        &step(0.08, 0.4, 30, MINUTES),
        &step(0.3, 2.6, 30, MINUTES),
        &steady(1000.0, MINUTES),
    );
    let a = ask(&[report, api], &minutes(30..40), "p99", 1.0);
    assert_eq!(a.culprits, [1], "{a:#?}");
    assert!(a.groups[0].standing);
    assert!(!a.groups[0].changed);
    assert!(a.counterfactual.unwrap() < 1.0, "{a:#?}");
}

#[test]
fn near_idle_groups_that_wobble_with_the_culprit_do_not_make_a_crowd() {
    // Two groups on a handful of requests double at the same minutes (a
    // shared slow call), but the load balancer's Average is the busy group's.
    let groups = [
        group(&step(0.1, 2.0, 30, MINUTES), &steady(800.0, MINUTES)),
        group(&step(0.05, 0.5, 30, MINUTES), &steady(2.0, MINUTES)),
        group(&step(0.04, 0.4, 30, MINUTES), &steady(1.0, MINUTES)),
        group(&steady(0.05, MINUTES), &steady(300.0, MINUTES)),
    ];
    let a = ask(&groups, &minutes(30..40), "Average", 0.8);
    assert_eq!(a.outcome, Outcome::Culprits, "{a:#?}");
    assert_eq!(a.culprits, [0]);
}

#[test]
fn every_group_slowing_at_the_same_minutes_is_shared_with_no_culprit() {
    let groups: Vec<Group> = [0.1, 0.15, 0.2, 0.12]
        .iter()
        .map(|base| {
            group(
                &step(*base, base * 6.0, 35, MINUTES),
                &steady(250.0, MINUTES),
            )
        })
        .collect();
    let a = ask(&groups, &minutes(35..40), "Average", 0.5);
    assert_eq!(a.outcome, Outcome::Shared);
    assert!(a.culprits.is_empty());
}

#[test]
fn a_metric_that_sat_above_the_threshold_all_along_changed_nothing() {
    let groups = [
        group(&steady(0.55, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.05, MINUTES), &steady(20.0, MINUTES)),
    ];
    let a = ask(&groups, &minutes(0..40), "Average", 0.5);
    assert_eq!(a.outcome, Outcome::NothingChanged);
    assert!(a.culprits.is_empty());
    assert_eq!(a.shares(), [0.0, 0.0], "noise is nobody's share");
    assert_eq!(a.baseline.source, BaselineSource::EarlyWindow);
    assert!(a.groups[0].standing);
}

#[test]
fn five_hundreds_add_up_so_the_group_that_started_failing_is_subtracted() {
    let groups = [
        group(&step(0.0, 40.0, 36, MINUTES), &steady(500.0, MINUTES)),
        group(&steady(1.0, MINUTES), &steady(500.0, MINUTES)),
    ];
    let a = ask(&groups, &minutes(36..40), "Sum", 10.0);
    assert_eq!(a.culprits, [0]);
    assert!((a.counterfactual.unwrap() - 1.0).abs() < 1e-9, "{a:?}");
}

#[test]
fn a_drop_under_a_low_threshold_falls_on_the_group_that_lost_its_traffic() {
    let groups = [
        group(&step(600.0, 20.0, 34, MINUTES), &steady(1.0, MINUTES)),
        group(&steady(400.0, MINUTES), &steady(1.0, MINUTES)),
    ];
    let breach = minutes(34..40);
    let question = question(
        &groups,
        &breach,
        Combination::Sum,
        700.0,
        Comparison::LessThan,
    );
    let a = attribute(&question).unwrap();
    assert_eq!(a.culprits, [0]);
    assert!(a.counterfactual.unwrap() >= 700.0);
}

#[test]
fn two_groups_each_half_of_the_rise_are_both_needed() {
    let groups = [
        group(&step(0.1, 1.2, 30, MINUTES), &steady(300.0, MINUTES)),
        group(&step(0.1, 1.2, 30, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.1, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.1, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.1, MINUTES), &steady(300.0, MINUTES)),
    ];
    // 0.54 s observed; either alone back at 0.1 s leaves 0.32 s, both 0.1 s.
    let a = ask(&groups, &minutes(30..40), "Average", 0.25);
    assert_eq!(a.outcome, Outcome::Culprits);
    let mut culprits = a.culprits.clone();
    culprits.sort_unstable();
    assert_eq!(culprits, [0, 1]);
    assert!(a.sufficient);
}

#[test]
fn two_groups_that_changed_alike_are_both_named_when_either_alone_would_do() {
    let groups = [
        group(&steady(0.1, MINUTES), &steady(300.0, MINUTES)),
        group(&step(0.1, 1.2, 30, MINUTES), &steady(300.0, MINUTES)),
        group(&step(0.1, 1.2, 30, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.1, MINUTES), &steady(300.0, MINUTES)),
        group(&steady(0.1, MINUTES), &steady(300.0, MINUTES)),
    ];
    let a = ask(&groups, &minutes(30..40), "Average", 0.4);
    let mut culprits = a.culprits.clone();
    culprits.sort_unstable();
    assert_eq!(culprits, [1, 2]);
}

#[test]
fn a_window_too_short_for_a_baseline_is_left_to_the_caller() {
    let groups = [group(&[0.1, 2.0, 2.0], &[100.0; 3])];
    let breach = minutes(1..3);
    let question = question(
        &groups,
        &breach,
        Combination::Mean,
        1.0,
        Comparison::GreaterThan,
    );
    assert!(attribute(&question).is_none());
}

#[test]
fn the_mixture_percentile_of_one_group_is_its_own_percentile() {
    let s = Sample {
        value: 1.2,
        requests: 100.0,
        p50: Some(0.2),
        p99: Some(1.2),
        maximum: Some(3.0),
    };
    let p99 = combine(&[s], Combination::Quantile(0.99)).unwrap();
    assert!((p99 - 1.2).abs() < 1e-6, "{p99}");
}

#[test]
fn statistics_map_to_how_groups_combine() {
    assert_eq!(
        Combination::of(&Statistic::parse("Average")),
        Combination::Mean
    );
    assert_eq!(
        Combination::of(&Statistic::parse("tm90")),
        Combination::Mean
    );
    assert_eq!(Combination::of(&Statistic::parse("Sum")), Combination::Sum);
    assert!(
        matches!(Combination::of(&Statistic::parse("p99.9")), Combination::Quantile(q) if (q - 0.999).abs() < 1e-12)
    );
    assert!(Combination::of(&Statistic::parse("p95")).is_approximate());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A world: `quiet` groups at steady levels, and one group whose latency
    /// rises `factor` times at minute 30.
    fn world(quiet: &[(f64, f64)], culprit: (f64, f64, f64)) -> Vec<Group> {
        let (base, factor, requests) = culprit;
        let mut groups = vec![group(
            &step(base, base * factor, 30, MINUTES),
            &steady(requests, MINUTES),
        )];
        for (level, requests) in quiet {
            groups.push(group(&steady(*level, MINUTES), &steady(*requests, MINUTES)));
        }
        groups
    }

    fn strategy() -> impl Strategy<Value = (Vec<(f64, f64)>, (f64, f64, f64))> {
        (
            prop::collection::vec((0.02f64..0.2, 50.0f64..500.0), 1..5),
            (0.05f64..0.2, 15.0f64..40.0, 200.0f64..800.0),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn a_standing_slow_group_with_a_small_share_never_changes_the_culprit(
            (quiet, culprit) in strategy(),
            slow in 2.0f64..8.0,
        ) {
            let before = ask(&world(&quiet, culprit), &minutes(30..40), "Average", 0.8);
            prop_assume!(before.outcome == Outcome::Culprits);
            let mut with_slow = quiet.clone();
            with_slow.push((slow, 1.0));
            let after = ask(&world(&with_slow, culprit), &minutes(30..40), "Average", 0.8);
            prop_assert_eq!(before.culprits, after.culprits);
        }

        #[test]
        fn the_order_of_the_groups_changes_nothing(
            (quiet, culprit) in strategy(),
        ) {
            let forward = world(&quiet, culprit);
            let mut reversed = world(&quiet, culprit);
            reversed.reverse();
            let n = forward.len();
            let a = ask(&forward, &minutes(30..40), "Average", 0.8);
            let b = ask(&reversed, &minutes(30..40), "Average", 0.8);
            prop_assert_eq!(a.outcome, b.outcome);
            let mapped: Vec<usize> = b.culprits.iter().map(|i| n - 1 - i).collect();
            prop_assert_eq!(a.culprits, mapped);
        }

        #[test]
        fn scaling_every_groups_traffic_keeps_the_culprit(
            (quiet, culprit) in strategy(),
            scale in 0.1f64..20.0,
        ) {
            let a = ask(&world(&quiet, culprit), &minutes(30..40), "Average", 0.8);
            let scaled_quiet: Vec<(f64, f64)> = quiet.iter().map(|(l, r)| (*l, r * scale)).collect();
            let scaled = (culprit.0, culprit.1, culprit.2 * scale);
            let b = ask(&world(&scaled_quiet, scaled), &minutes(30..40), "Average", 0.8);
            prop_assert_eq!(a.outcome, b.outcome);
            prop_assert_eq!(a.culprits, b.culprits);
        }
    }
}

#[test]
fn a_percentile_is_calibrated_by_ratio_so_the_counterfactual_stays_on_its_scale() {
    // CloudWatch's own p99 for the load balancer is half what the mixture of
    // quantiles models: the counterfactual keeps that proportion, never below 0.
    let api = tail_group(
        &step(0.08, 0.4, 30, MINUTES),
        &step(0.3, 6.0, 30, MINUTES),
        &steady(1000.0, MINUTES),
    );
    let web = tail_group(
        &steady(0.05, MINUTES),
        &steady(0.2, MINUTES),
        &steady(500.0, MINUTES),
    );
    let groups = [api, web];
    let observed = series(
        &(0..MINUTES)
            .map(|m| if m >= 30 { 3.0 } else { 0.3 })
            .collect::<Vec<_>>(),
    );
    let breach = minutes(30..40);
    let mut q = question(
        &groups,
        &breach,
        Combination::Quantile(0.99),
        1.5,
        Comparison::GreaterThan,
    );
    q.observed = Some(&observed);
    let a = attribute(&q).unwrap();
    assert_eq!(a.culprits, [0]);
    let without = a.counterfactual.unwrap();
    assert!(without > 0.05 && without < 1.5, "{without}");
}

/// Series that exist only from minute `from` on (a group that served nothing before).
fn from_minute(value: f64, from: usize, minutes: usize) -> MetricSeries {
    MetricSeries {
        id: "s".into(),
        points: (from..minutes).map(|m| (t(m as i64), value)).collect(),
    }
}

#[test]
fn a_group_that_starts_serving_slowly_when_the_breach_begins_is_the_culprit() {
    // A canary behind a weighted forward: no requests (no datapoints) until a
    // listener change sends it half of cart's traffic, slow; stable cart
    // loses that half and keeps its latency.
    let canary = Group {
        value: from_minute(1.9, 30, MINUTES),
        requests: from_minute(700.0, 30, MINUTES),
        p50: from_minute(1.1, 30, MINUTES),
        p99: from_minute(4.0, 30, MINUTES),
        maximum: from_minute(8.0, 30, MINUTES),
    };
    let groups = [
        group(&steady(0.086, MINUTES), &step(1400.0, 700.0, 30, MINUTES)),
        canary,
        group(&steady(0.05, MINUTES), &steady(2000.0, MINUTES)),
    ];
    let a = ask(&groups, &minutes(30..40), "Average", 0.25);
    assert_eq!(a.outcome, Outcome::Culprits, "{a:#?}");
    assert_eq!(a.culprits, [1]);
    assert!(a.groups[1].appeared && a.groups[1].baseline.is_none());
    assert!(a.sufficient);
    assert!(a.counterfactual.unwrap() < 0.1, "{a:#?}");
    assert!(
        !a.groups[0].changed,
        "stable cart only lost traffic: {a:#?}"
    );
}

#[test]
fn a_group_that_starts_serving_fast_is_no_culprit() {
    let fast = Group {
        value: from_minute(0.02, 30, MINUTES),
        requests: from_minute(500.0, 30, MINUTES),
        p50: from_minute(0.01, 30, MINUTES),
        p99: from_minute(0.05, 30, MINUTES),
        maximum: from_minute(0.1, 30, MINUTES),
    };
    let groups = [
        group(&step(0.1, 3.0, 30, MINUTES), &steady(400.0, MINUTES)),
        fast,
    ];
    let a = ask(&groups, &minutes(30..40), "Average", 0.8);
    assert_eq!(a.culprits, [0], "{a:#?}");
    assert!(!a.groups[1].changed);
}
