//! Evidence gathering: runs the sources a notification calls for, concurrently,
//! each under its own timeout and all under the invocation's deadline, in
//! three phases:
//!
//! 1. the cloud: the alarm's history, definition and metric, the load
//!    balancer's target groups and what is read about each, and meanwhile the
//!    cluster connection and its TargetGroupBindings (they do not depend on
//!    which group is the culprit);
//! 2. the breakdown of the target groups, computed once, which names the culprit;
//! 3. the workload behind the culprit, with its pods' series queried as soon
//!    as the pods are listed.
//!
//! Calls that depend on each other start as soon as their input arrives;
//! independent ones never wait for each other. Whatever does not answer in
//! time, or answers with an error, becomes an evidence gap with the reason;
//! the diagnosis is produced regardless.

mod ledger;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use tokio::sync::oneshot;

use crate::diagnosis::AlarmFacts;
use crate::evidence::changes::{TrailEvidence, TrailLookup};
use crate::evidence::family::{Answers, LoadBalancerFamily};
use crate::evidence::logs::{LogEvidence, LogWindow};
use crate::evidence::model::{self, EvidenceGap, LoadBalancer};
use crate::evidence::workload::{PodSeries, TargetGroupBindings, Workload, WorkloadTarget};
use crate::evidence::{
    AlbEvidence, AuditTrailSource, Budget, Collection, EvidenceSources, GatheredEvidence,
    GroupEvidence, KubernetesSource, LoadBalancerErrors, LoadBalancerSource, LogSource,
    MetricHistory, MetricSource, Plan, PlannedMetric, PodSeriesSource, STANDING_SPAN_DAYS,
    Statistics, source, standing_from, standing_queries, statistics_from, statistics_queries,
};
use crate::findings::{Investigation, alb::AlbAnalysis};
pub use ledger::Ledger;

mod logs;

/// The sources an offline run reports as not collected.
fn offline_sources(plan: &Plan) -> Vec<&'static str> {
    let mut out = vec![source::ALARM_HISTORY, source::ALARM_DEFINITION];
    if plan.metric.is_some() {
        out.extend([source::METRIC_STATISTICS, source::METRIC_HISTORY]);
    }
    if plan.load_balancer_dimension.is_some() {
        out.extend([
            source::TARGET_GROUPS,
            source::TARGET_GROUP_METRICS,
            source::TARGET_HEALTH,
            source::KUBERNETES,
            source::POD_SERIES,
            source::CLOUDTRAIL,
        ]);
    }
    out
}

/// An investigation with nothing read: every source the plan names is a gap with `reason`.
fn not_collected(plan: Plan, alarm: &AlarmFacts, reason: &str) -> Investigation {
    let evidence = GatheredEvidence {
        gaps: offline_sources(&plan)
            .into_iter()
            .map(|source| EvidenceGap {
                source: source.to_owned(),
                reason: reason.to_owned(),
            })
            .collect(),
        ..GatheredEvidence::default()
    };
    Investigation::of(alarm.clone(), plan, evidence)
}

/// Everything phase 1 brings back.
#[derive(Debug, Default)]
struct CloudData {
    history: Option<crate::history::AlarmHistory>,
    definition: Option<Option<model::AlarmDefinition>>,
    statistics: Option<Statistics>,
    standing: Option<MetricHistory>,
    alb: Option<AlbEvidence>,
    /// The cluster connection succeeded (or was not needed).
    connected: bool,
    bindings: Option<TargetGroupBindings>,
}

/// Where the metric window starts and ends.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
}

/// Gathers the evidence for one alarm, and the breakdown that picked the workload.
pub async fn gather<S: EvidenceSources>(
    collection: &Collection<S>,
    alarm: &AlarmFacts,
    budget: Budget,
    now: DateTime<Utc>,
) -> Investigation {
    let plan = alarm.plan();
    let sources = match collection {
        Collection::Live(sources) => sources,
        Collection::Offline => return not_collected(plan, alarm, "not collected (offline)"),
        Collection::Unreachable(reason) => return not_collected(plan, alarm, reason),
    };
    let ledger = Ledger::new(budget.overall, budget.per_source);
    let window = Window {
        start: align(
            crate::instants::earlier(now, budget.metric_window),
            plan.metric
                .as_ref()
                .map_or(alarm.period(), |m| m.period_seconds),
        ),
        end: now,
    };

    // The audit trail depends on nothing else: it is read alongside every phase.
    // Both branches are boxed: their futures are large, and a deep stack of
    // them overflows a test thread's stack in debug builds.
    let trail = Box::pin(read_trail(
        sources,
        &ledger,
        plan.load_balancer_dimension.clone(),
        crate::instants::earlier(window.start, crate::changes::LOOKBACK),
        now,
    ));
    let main = Box::pin(read_phases(sources, &ledger, alarm, plan, budget, window));
    let ((mut investigation, read), trail) = tokio::join!(main, trail);
    let (gaps, timings) = ledger.close();
    let evidence = &mut investigation.evidence;
    evidence.workload = read.workload;
    evidence.pod_series = read.pod_series;
    evidence.logs = read.logs;
    evidence.trail = trail;
    evidence.gaps = gaps;
    evidence.timings = timings;
    investigation
}

/// What phase 3 read about the culprit's workload.
#[derive(Debug, Default)]
struct WorkloadRead {
    workload: Option<Workload>,
    pod_series: Option<PodSeries>,
    logs: Option<LogEvidence>,
}

/// Phases 1 to 3: the cloud, the breakdown, the workload.
async fn read_phases<S: EvidenceSources>(
    sources: &S,
    ledger: &Ledger,
    alarm: &AlarmFacts,
    plan: Plan,
    budget: Budget,
    window: Window,
) -> (Investigation, WorkloadRead) {
    let mut cloud = Box::pin(read_cloud(sources, ledger, alarm, &plan, budget, window)).await;
    if let (Some(alb), Some(bindings)) = (cloud.alb.as_mut(), cloud.bindings.as_ref()) {
        alb.services = bindings.services.clone();
    }
    let (connected, bindings) = (cloud.connected, cloud.bindings);
    let investigation = Investigation::of(
        alarm.clone(),
        plan,
        GatheredEvidence {
            history: cloud.history,
            definition: cloud.definition,
            statistics: cloud.statistics,
            standing: cloud.standing,
            alb: cloud.alb,
            ..GatheredEvidence::default()
        },
    );
    // The breach began about one evaluation span before the transition.
    let span = i64::from(alarm.period()) * i64::from(alarm.evaluation_periods.unwrap_or(1).max(1));
    let log_window = LogWindow::around(
        window.start,
        crate::instants::earlier(
            alarm.state_change_time.min(window.end),
            chrono::Duration::seconds(span),
        ),
        window.end,
    );
    let read = match (&investigation.evidence.alb, &investigation.plan.metric) {
        (Some(alb), Some(metric)) => {
            let breakdown = investigation.breakdown.as_ref();
            let target = breakdown.and_then(|b| culprit_target(b, alb, bindings));
            match target {
                Some(_) if !connected => {
                    ledger.gap(
                        source::KUBERNETES,
                        "not read: the cluster connection failed (see eks:DescribeCluster and the cluster connection)",
                    );
                    WorkloadRead::default()
                }
                Some(target) => {
                    Box::pin(read_workload(
                        sources,
                        ledger,
                        &target,
                        window,
                        log_window,
                        metric.period_seconds.max(60),
                    ))
                    .await
                }
                None => {
                    if !alb.groups.is_empty() {
                        ledger.gap(source::KUBERNETES, no_workload_reason(breakdown));
                    }
                    WorkloadRead::default()
                }
            }
        }
        _ => WorkloadRead::default(),
    };
    (investigation, read)
}

/// The audit trail's records for each kind of resource on the path, and the
/// load balancer's security groups to match them against. `None` when the
/// alarm names no load balancer (no path to look at).
async fn read_trail<S: AuditTrailSource + LoadBalancerSource>(
    sources: &S,
    ledger: &Ledger,
    dimension: Option<String>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Option<TrailEvidence> {
    let dimension = dimension?;
    let lookups = join_all(TrailLookup::ALL.into_iter().map(|lookup| async move {
        let page = ledger
            .run(source::CLOUDTRAIL, sources.trail_events(lookup, from, to))
            .await;
        (lookup, page)
    }));
    let balancer = ledger.run(source::LOAD_BALANCER, sources.load_balancer(&dimension));
    let (pages, balancer) = tokio::join!(lookups, balancer);
    let mut trail = TrailEvidence {
        security_groups: balancer
            .flatten()
            .map(|lb| lb.security_groups)
            .unwrap_or_default(),
        from: Some(from),
        to: Some(to),
        ..TrailEvidence::default()
    };
    for (lookup, page) in pages {
        if let Some(page) = page {
            trail.read.push(lookup);
            if page.truncated {
                trail.truncated.push(lookup);
            }
            trail.events.extend(page.events);
        }
    }
    Some(trail)
}

/// Phase 1: everything that does not depend on the culprit, concurrently.
async fn read_cloud<S: EvidenceSources>(
    sources: &S,
    ledger: &Ledger,
    alarm: &AlarmFacts,
    plan: &Plan,
    budget: Budget,
    window: Window,
) -> CloudData {
    let history = ledger.run(
        source::ALARM_HISTORY,
        sources.state_history(
            &alarm.name,
            crate::instants::earlier(window.end, budget.lookback),
            window.end,
        ),
    );
    let definition = ledger.run(source::ALARM_DEFINITION, sources.definition(&alarm.name));
    let statistics = async {
        let metric = plan.metric.as_ref()?;
        let series = ledger
            .run(
                source::METRIC_STATISTICS,
                sources.metric_data(&statistics_queries(metric), window.start, window.end),
            )
            .await?;
        Some(statistics_from(metric, series))
    };
    // Beside the window: the same metric over the days CloudWatch keeps, in
    // one call, so every alarm can be asked "was it always like this?".
    let standing = async {
        let metric = plan.metric.as_ref()?;
        let from = window.end - chrono::Duration::days(STANDING_SPAN_DAYS);
        let series = ledger
            .run(
                source::METRIC_HISTORY,
                sources.metric_data(
                    &standing_queries(metric),
                    align(from, metric.period_seconds),
                    window.end,
                ),
            )
            .await?;
        Some(standing_from(metric, series))
    };
    let alb = async {
        let dimension = plan.load_balancer_dimension.as_deref()?;
        read_load_balancer(
            sources,
            ledger,
            plan,
            (plan.family?, plan.metric.as_ref()?),
            dimension,
            window,
        )
        .await
    };
    // Connecting (DescribeCluster, the token) and listing the bindings overlap
    // the load balancer calls, under the same bounds as every other call.
    let cluster = async {
        if plan.load_balancer_dimension.is_none() {
            return (true, None);
        }
        if ledger
            .run(source::CLUSTER, sources.prepare())
            .await
            .is_none()
        {
            return (false, None);
        }
        let bindings = ledger
            .run(
                source::TARGET_GROUP_BINDINGS,
                sources.target_group_bindings(),
            )
            .await
            // Listing failed (recorded as a gap): the walk falls back on AWS's hints.
            .unwrap_or_else(|| Some(TargetGroupBindings::default()));
        (true, bindings)
    };
    let (history, definition, statistics, standing, alb, (connected, bindings)) =
        tokio::join!(history, definition, statistics, standing, alb, cluster);
    CloudData {
        history,
        definition,
        statistics,
        standing,
        alb,
        connected,
        bindings,
    }
}

/// The load balancer's target groups, then their metrics, tags, attributes and health.
async fn read_load_balancer<S: LoadBalancerSource + MetricSource>(
    sources: &S,
    ledger: &Ledger,
    plan: &Plan,
    (family, metric): (&LoadBalancerFamily, &PlannedMetric),
    dimension: &str,
    window: Window,
) -> Option<AlbEvidence> {
    let gone = AlbEvidence {
        services: Default::default(),
        load_balancer: None,
        groups: Vec::new(),
        errors: LoadBalancerErrors::default(),
    };
    // The ARN is known from the alarm: ask for the target groups at once.
    // Without an alarm ARN, find the load balancer first.
    let arn = match &plan.load_balancer_arn {
        Some(arn) => arn.clone(),
        None => match ledger
            .run(source::LOAD_BALANCER, sources.load_balancer(dimension))
            .await?
        {
            Some(lb) => lb.arn,
            None => return Some(gone),
        },
    };
    let Some(groups) = ledger
        .run(source::TARGET_GROUPS, sources.target_groups(&arn))
        .await?
    else {
        return Some(gone);
    };
    let load_balancer = LoadBalancer {
        name: model::load_balancer_name(dimension)
            .unwrap_or(dimension)
            .to_owned(),
        arn,
        dimension: dimension.to_owned(),
        scheme: None,
        security_groups: Vec::new(),
    };
    // One GetMetricData call: every group's series, then the load balancer's failures.
    let mut queries = family.group_queries(metric, &load_balancer.dimension, &groups);
    queries.extend(family.error_queries(&load_balancer.dimension, metric.period_seconds));
    let arns: Vec<String> = groups.iter().map(|g| g.arn.clone()).collect();
    let (series, tags, attributes, health) = tokio::join!(
        ledger.run(
            source::TARGET_GROUP_METRICS,
            sources.metric_data(&queries, window.start, window.end)
        ),
        ledger.run(source::TAGS, sources.tags(&arns)),
        join_all(
            groups
                .iter()
                .map(|g| ledger.run(source::TARGET_GROUP_ATTRIBUTES, sources.attributes(&g.arn)))
        ),
        join_all(
            groups
                .iter()
                .map(|g| ledger.run(source::TARGET_HEALTH, sources.target_health(&g.arn)))
        ),
    );
    let mut answers = Answers::new(series.unwrap_or_default());
    let errors = family.errors(&mut answers);
    let groups = groups
        .into_iter()
        .zip(attributes.into_iter().zip(health))
        .enumerate()
        .map(|(i, (group, (attributes, health)))| {
            let series = family.group_series(&mut answers, i);
            GroupEvidence {
                tags: tags
                    .as_ref()
                    .map(|t| t.get(&group.arn).cloned().unwrap_or_default()),
                algorithm: attributes.as_ref().and_then(|a| a.algorithm.clone()),
                slow_start_seconds: attributes.as_ref().and_then(|a| a.slow_start_seconds),
                deregistration: attributes
                    .as_ref()
                    .map(|a| (a.deregistration_delay_seconds, a.connection_termination)),
                health,
                metric: series.metric,
                p50: series.p50,
                p99: series.p99,
                maximum: series.maximum,
                requests: series.traffic,
                target_errors: series.target_errors,
                unhealthy_hosts: series.unhealthy_hosts,
                healthy_hosts: series.healthy_hosts,
                group,
            }
        })
        .map(|mut g: GroupEvidence| {
            // A rate alarm: each group's metric per request, as the alarm computes it.
            if let Some(scale) = metric.per_request_scale {
                g.metric = crate::evidence::per_request(&g.metric, &g.requests, scale);
            }
            g
        })
        .collect();
    Some(AlbEvidence {
        services: Default::default(),
        load_balancer: Some(load_balancer),
        groups,
        errors,
    })
}

/// Phase 3: the workload walk, and the pods' series and logs as soon as the
/// pods are listed.
async fn read_workload<S: KubernetesSource + PodSeriesSource + LogSource>(
    sources: &S,
    ledger: &Ledger,
    target: &WorkloadTarget,
    window: Window,
    log_window: LogWindow,
    step_seconds: u32,
) -> WorkloadRead {
    let (pods_listed, listed) = oneshot::channel();
    let walk = ledger.run(source::KUBERNETES, sources.workload(target, pods_listed));
    let listed_read = async {
        // Dropped unsent (the walk failed or found no pods): nothing to read.
        let listed = listed.await.ok()?;
        if listed.pods.is_empty() {
            return None;
        }
        let series = ledger.run(
            source::POD_SERIES,
            sources.pod_series(&listed, window.start, window.end, step_seconds),
        );
        let logs = logs::read_logs(sources, ledger, &listed, log_window);
        Some(tokio::join!(series, logs))
    };
    let (workload, listed_read) = tokio::join!(walk, listed_read);
    let (pod_series, logs) = listed_read.unwrap_or_default();
    WorkloadRead {
        workload,
        pod_series,
        logs,
    }
}

/// Why no workload was walked, for the evidence gap.
fn no_workload_reason(breakdown: Option<&AlbAnalysis>) -> &'static str {
    use crate::findings::attribution::Outcome;
    match breakdown
        .and_then(|b| b.attribution.as_ref())
        .map(|a| a.outcome)
    {
        Some(Outcome::Shared) => {
            "not read: the target groups moved together (a shared problem), so no one workload is to blame"
        }
        Some(Outcome::NothingChanged) => {
            "not read: no target group changed, so no workload is to blame"
        }
        _ => "not read: no single target group stands out, so there is no workload to examine",
    }
}

/// The workload question for the culprit target group the breakdown named.
fn culprit_target(
    breakdown: &AlbAnalysis,
    alb: &AlbEvidence,
    bindings: Option<TargetGroupBindings>,
) -> Option<WorkloadTarget> {
    let culprit = breakdown.summaries.iter().find(|s| s.culprit)?;
    let group = alb.groups.iter().find(|g| g.group.arn == culprit.arn)?;
    Some(WorkloadTarget {
        cluster: group
            .tags
            .as_ref()
            .and_then(|t| t.get("elbv2.k8s.aws/cluster").cloned()),
        target_group_arn: group.group.arn.clone(),
        target_group_name: group.group.name.clone(),
        service_hint: culprit.kubernetes_service.clone(),
        bindings,
    })
}

/// Rounds `t` down to a multiple of the period, as CloudWatch aligns periods.
fn align(t: DateTime<Utc>, period_seconds: u32) -> DateTime<Utc> {
    let period = i64::from(period_seconds.max(1));
    let seconds = t.timestamp() - t.timestamp().rem_euclid(period);
    DateTime::from_timestamp(seconds, 0).unwrap_or(t)
}
