//! One function per proposal: each reads the typed findings in a [`Context`]
//! and returns a proposal, or nothing when the findings do not call for it.

use chrono::Duration;

use super::Context;
use super::commands::{
    alarm_history, aws, iso, kubectl, pod_cpu, promql, region_flag, shell_quote,
};
use crate::alarm::facts::{MetricFamily, Statistic};
use crate::classify::Behaviour;
use crate::diagnosis::summary::{TargetGroupSummary, WorkloadSummary};
use crate::diagnosis::{Facts, Finding, FindingId, NextStep};
use crate::evidence::family::{self, LoadBalancerFamily};
use crate::evidence::model::load_balancer_name;

/// The workload's namespace and the name of its Deployment (the Service's when unknown).
fn workload_names(w: &WorkloadSummary) -> (&str, &str) {
    (
        &w.namespace,
        w.deployment.as_deref().unwrap_or(w.service.as_str()),
    )
}

fn summary_of(context: &Context<'_>, id: FindingId) -> String {
    context
        .supported(id)
        .map(|f| f.summary.clone())
        .unwrap_or_default()
}

/// Out of ALARM: whether to close the investigation.
pub fn after_recovery(context: &Context<'_>) -> NextStep {
    let (proposal, rationale) = if context.classification.behaviour == Behaviour::Flapping {
        (
            "Treat this recovery as a pause, not a fix: keep the investigation open",
            "The alarm is flapping; it has recovered before and came back each time.",
        )
    } else if crate::findings::registry::causes(context.findings).is_empty() {
        (
            "Confirm that the recovery holds and note the episode in the on-call log",
            "A single episode that cleared by itself needs no action unless it repeats.",
        )
    } else {
        (
            "Confirm that the recovery holds and note the episode and its cause in the on-call log",
            "It cleared by itself, but its cause is still there to bring it back.",
        )
    };
    NextStep {
        proposal: proposal.to_owned(),
        rationale: rationale.to_owned(),
        trade_offs: None,
        commands: vec![alarm_history(context.alarm, context.now)],
    }
}

/// When nothing more specific applies.
pub fn read_the_history(context: &Context<'_>) -> NextStep {
    NextStep {
        proposal: "Read the alarm's recent history and the metric around the transition".to_owned(),
        rationale: "No specialised enrichment exists yet for this kind of alarm; the history tells whether this is new.".to_owned(),
        trade_offs: None,
        commands: vec![alarm_history(context.alarm, context.now)],
    }
}

/// A flapping alarm: the cycles began before the latest change, or not.
pub fn date_the_flapping(context: &Context<'_>) -> Option<NextStep> {
    let classification = context.classification;
    (classification.behaviour == Behaviour::Flapping).then(|| NextStep {
        proposal: "Date the start of the flapping before suspecting the latest change".to_owned(),
        rationale: format!(
            "Flapping episodes are often blamed on the most recent deploy; the history shows when the cycles began{}.",
            classification
                .figures
                .episode_started_at
                .map(|t| format!(" (here: {})", t.format("%Y-%m-%d %H:%M UTC")))
                .unwrap_or_default()
        ),
        trade_offs: None,
        commands: vec![alarm_history(context.alarm, context.now)],
    })
}

/// One culprit target group: its targets, its Service and its pods' CPU.
pub fn investigate_target_group(context: &Context<'_>, group: &TargetGroupSummary) -> NextStep {
    let alarm = context.alarm;
    let mut commands = vec![aws(format!(
        "aws elbv2 describe-target-health --target-group-arn {} --output table{}",
        shell_quote(&group.arn),
        region_flag(alarm)
    ))];
    if let Some(service) = &group.kubernetes_service {
        let ns = shell_quote(&service.namespace);
        let name = shell_quote(&service.name);
        commands.push(kubectl(format!("kubectl -n {ns} describe service {name}")));
        commands.push(kubectl(format!(
            "kubectl -n {ns} get endpoints {name} -o wide"
        )));
        commands.push(promql(format!(
            "sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace=\"{}\", container!=\"\"}}[2m]))",
            service.namespace
        )));
    }
    NextStep {
        proposal: format!(
            "Investigate {}, the target group behind the alarm",
            group.label()
        ),
        rationale: format!(
            "It accounts for {} of the breach{}{}.",
            group
                .share_of_breach
                .map_or("most".to_owned(), |s| format!("{:.0} %", s * 100.0)),
            group
                .statistic_while_breaching
                .map(|v| format!(
                    " with {} {v} while breaching (threshold {})",
                    alarm
                        .statistic
                        .as_ref()
                        .map_or_else(|| "value".to_owned(), ToString::to_string),
                    alarm.threshold.unwrap_or_default()
                ))
                .unwrap_or_default(),
            group
                .baseline
                .zip(group.without_its_change)
                .map(|(usual, without)| format!(
                    "; it usually runs at {usual}, and back there the alarm's metric would have been {without}"
                ))
                .unwrap_or_default()
        ),
        trade_offs: None,
        commands,
    }
}

/// Headroom above the workers' measured peak, so that a limit sized for them
/// does not throttle them at their busiest.
pub const LIMIT_HEADROOM: f64 = 1.25;

/// CPU for `proposed` workers where `workers_per_pod` workers plateau at
/// `plateau_cores` per pod: per worker, in total at peak, and a limit in
/// millicores (the total plus [`LIMIT_HEADROOM`], rounded up to a quarter core).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkerSizing {
    pub cores_per_worker: f64,
    pub cores_needed: f64,
    pub limit_millicores: u32,
}

pub fn cores_for_workers(plateau_cores: f64, workers_per_pod: u32, proposed: u32) -> WorkerSizing {
    let cores_per_worker = plateau_cores / f64::from(workers_per_pod.max(1));
    let cores_needed = cores_per_worker * f64::from(proposed);
    let limit_millicores =
        ((cores_needed * LIMIT_HEADROOM * 1000.0 / 250.0).ceil() * 250.0).max(250.0) as u32;
    WorkerSizing {
        cores_per_worker,
        cores_needed,
        limit_millicores,
    }
}

/// Each pod capped by its worker count: double the workers, size the limit to match.
pub fn more_workers_per_pod(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::WorkerCeiling)?;
    let Facts::Ceiling(ceiling) = context.facts(FindingId::WorkerCeiling) else {
        return None;
    };
    let (namespace, deployment) = workload_names(context.workload?);
    let workers = ceiling.workers_per_pod.max(1);
    let proposed = workers * 2;
    let WorkerSizing {
        cores_per_worker,
        cores_needed: needed,
        limit_millicores,
    } = cores_for_workers(ceiling.plateau_cores, workers, proposed);
    let plural = |n: u32, one: &str, many: &str| {
        if n == 1 {
            one.to_owned()
        } else {
            format!("{n} {many}")
        }
    };
    let sizing = match ceiling.limit_cores {
        Some(limit) if limit * 1000.0 >= f64::from(limit_millicores) => format!(
            "the current {limit}-core limit already covers that with headroom: raise the request toward {needed:.1} cores"
        ),
        _ => format!(
            "set the limit to {limit_millicores}m ({needed:.1} cores plus {:.0} % headroom) and the request toward {needed:.1} cores",
            (LIMIT_HEADROOM - 1.0) * 100.0
        ),
    };
    Some(NextStep {
        proposal: format!(
            "Run more workers per pod in {deployment} (e.g. {proposed} instead of {workers}) and size the CPU limit to match"
        ),
        rationale: format!(
            "Each pod tops out at {:.2} cores{}: {} serve{} {} at a time and the rest queue. More workers per pod raise the fleet's concurrency without more pods.",
            ceiling.plateau_cores,
            ceiling
                .limit_cores
                .map(|l| format!(" of its {l}-core limit"))
                .unwrap_or_default(),
            plural(workers, "one CPU-bound worker", "CPU-bound workers"),
            if workers == 1 { "s" } else { "" },
            plural(workers, "one heavy request", "heavy requests"),
        ),
        trade_offs: Some(format!(
            "{proposed} workers need about {needed:.1} cores at peak ({proposed} x {cores_per_worker:.2} cores per worker): {sizing}, and expect more memory per pod; more pods (HPA) is the other lever."
        )),
        commands: vec![
            kubectl(format!(
                "kubectl -n {} get deployment {} -o jsonpath='{{.spec.template.spec.containers[*].args}}'",
                shell_quote(namespace),
                shell_quote(deployment)
            )),
            pod_cpu(namespace, deployment),
        ],
    })
}

/// Cores rounded up to a quarter core, written without trailing zeros (`1.25`).
pub fn quarter_cores_up(cores: f64) -> String {
    let quarters = (cores * 4.0).ceil().max(1.0) / 4.0;
    let text = format!("{quarters:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A CPU request at which a per-process plateau of `plateau_cores` reads as
/// about 10 % over a `target` % HPA target, rounded down to a quarter core.
pub fn request_for_target(plateau_cores: f64, target: u32) -> f64 {
    let request = plateau_cores / (f64::from(target.max(1)) / 100.0 * 1.1);
    ((request * 4.0).floor() / 4.0).max(0.25)
}

/// A CPU target the pods can reach: three quarters of the peak, in steps of 5 %.
pub fn reachable_target(peak_utilisation: f64) -> u32 {
    (((peak_utilisation * 0.75) / 5.0).floor() * 5.0).max(5.0) as u32
}

/// Replicas the HPA would want at `peak` % utilisation against `target` %,
/// from `current` replicas (what `desiredReplicas` computes), at least one more.
pub fn replicas_for(current: u32, peak: f64, target: u32) -> u32 {
    let wanted = (f64::from(current) * peak / f64::from(target.max(1))).ceil();
    (wanted.min(f64::from(u32::MAX)) as u32).max(current + 1)
}

/// The HPA cannot react while the pods are saturated: what would let it (or
/// propose one). Silent when the HPA is only context: more pods would not
/// help pods that have CPU to spare.
pub fn let_the_hpa_react(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::HpaCannotReact)?;
    let Facts::Hpa(facts) = &finding.facts else {
        return None;
    };
    let (namespace, deployment) = workload_names(context.workload?);
    let ns = shell_quote(namespace);
    let imbalanced = context.supported(FindingId::PodImbalance).is_some();
    let Some(bounds) = &facts.bounds else {
        return Some(NextStep {
            proposal: format!("Consider an HPA for {deployment}"),
            rationale: finding.summary.clone(),
            trade_offs: Some("An HPA adds pods only as fast as nodes and start-up allow; set CPU requests first so it can compute utilisation.".to_owned()),
            commands: vec![kubectl(format!("kubectl -n {ns} get hpa"))],
        });
    };
    let hpa = shell_quote(&bounds.name);
    if let Some(condition) = &facts.blocked {
        return Some(restore_what_the_hpa_needs(finding, condition, &ns, &hpa));
    }
    if bounds.at_max() {
        // Usage capped by a limit understates demand: the count is then a floor.
        let capped = matches!(
            context.facts(FindingId::CpuThrottling),
            Facts::Throttling(t) if !t.pods_at_limit.is_empty()
        );
        let suggestion = facts
            .peak_utilisation
            .zip(facts.target_utilisation)
            .filter(|(peak, target)| *peak > f64::from(*target))
            .map(|(peak, target)| {
                format!(
                    " to {} {} ({peak:.0} % utilisation against its {target} % target{})",
                    if capped { "at least" } else { "about" },
                    replicas_for(bounds.max_replicas, peak, target),
                    if capped {
                        ", measured while the CPU limit caps usage, so demand is higher"
                    } else {
                        ""
                    }
                )
            })
            .unwrap_or_default();
        return Some(NextStep {
            proposal: format!(
                "Raise the HPA's maxReplicas{suggestion}: it is at its maximum of {}; check the nodes have room for the extra pods",
                bounds.max_replicas
            ),
            rationale: finding.summary.clone(),
            trade_offs: Some("More replicas need node capacity (node group maximum, Karpenter limits) and cost; a lower CPU target does nothing at the maximum.".to_owned()),
            commands: vec![
                kubectl(format!("kubectl -n {ns} describe hpa {hpa}")),
                kubectl("kubectl describe nodes | grep -A5 'Allocated resources'".to_owned()),
            ],
        });
    }
    let proposal = if imbalanced {
        "Do not count on the HPA here: the mean it scales on hides the hot pod(s); fix those first"
            .to_owned()
    } else if facts.request_cores.is_none() {
        format!("Set CPU requests on {deployment}'s containers so the HPA can compute utilisation")
    } else if let Some(peak) = facts.peak_utilisation {
        let request_instead = match (
            context.facts(FindingId::WorkerCeiling),
            facts.target_utilisation,
            facts.request_cores,
        ) {
            (Facts::Ceiling(c), Some(target), Some(request))
                if context.supported(FindingId::WorkerCeiling).is_some()
                    && request_for_target(c.plateau_cores, target) < request =>
            {
                format!(
                    ", or lower the CPU request from {request} to about {} cores: the workers can never use more than {:.2}",
                    request_for_target(c.plateau_cores, target),
                    c.plateau_cores
                )
            }
            _ => String::new(),
        };
        format!(
            "Lower the HPA's CPU target to about {} % so that the {peak:.0} % the pods can reach triggers scaling{request_instead}",
            reachable_target(peak)
        )
    } else {
        "Make the HPA able to see the load (CPU requests set, a target the pods can reach)"
            .to_owned()
    };
    Some(NextStep {
        proposal,
        rationale: finding.summary.clone(),
        trade_offs: Some("A lower target keeps more pods running at rest (cost); raise maxReplicas with it so scaling has room; autoscaling/v2 can also scale on request rate per target.".to_owned()),
        commands: vec![
            kubectl(format!("kubectl -n {ns} describe hpa {hpa}")),
            kubectl(format!("kubectl -n {ns} get hpa {hpa} -o yaml")),
        ],
    })
}

/// The HPA said why it cannot act: that, not its target or maximum, is what
/// to fix. Without metrics it needs its metrics API back.
fn restore_what_the_hpa_needs(
    finding: &Finding,
    condition: &crate::evidence::workload::Condition,
    ns: &str,
    hpa: &str,
) -> NextStep {
    let reason = condition.reason.as_deref().unwrap_or_default();
    let metrics = reason.starts_with("FailedGet") || reason == "InvalidMetricSourceType";
    let (proposal, mut commands) = if metrics {
        (
            format!(
                "Restore the metrics the HPA reads ({}): it does not scale until it can read them; check the metrics API (metrics-server, or the adapter for custom and external metrics) and its APIService",
                condition.describe()
            ),
            vec![
                kubectl("kubectl get apiservices | grep metrics".to_owned()),
                kubectl("kubectl -n kube-system get pods -l k8s-app=metrics-server".to_owned()),
                kubectl(format!("kubectl -n {ns} top pods")),
            ],
        )
    } else {
        (
            format!(
                "Fix what stops the HPA ({}): it does not scale while that holds",
                condition.describe()
            ),
            Vec::new(),
        )
    };
    commands.insert(0, kubectl(format!("kubectl -n {ns} describe hpa {hpa}")));
    NextStep {
        proposal,
        rationale: finding.summary.clone(),
        trade_offs: Some("Its target and maximum do not matter while it cannot act; scaling the Deployment by hand meanwhile is undone by the HPA once its metrics return.".to_owned()),
        commands,
    }
}

/// One or a few pods far busier than their peers: look at them before restarting them.
pub fn look_at_the_hot_pod(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.supported(FindingId::PodImbalance)?;
    let Facts::Imbalance(facts) = &finding.facts else {
        return None;
    };
    let hot = &facts.hot.first().or(facts.busiest.as_ref())?.pod;
    let (namespace, deployment) = workload_names(context.workload?);
    let ns = shell_quote(namespace);
    let others = match facts.hot.len() {
        0 | 1 => String::new(),
        n => format!(" (and the {} other hot pods)", n - 1),
    };
    Some(NextStep {
        proposal: format!("Find out why {hot}{others} runs hotter than its peers"),
        rationale: finding.summary.clone(),
        trade_offs: Some("Restarting the pod may clear it but destroys the evidence: look first (logs, stuck work, a hot key, long-lived connections, a cold cache after a restart).".to_owned()),
        commands: vec![
            kubectl(format!("kubectl -n {ns} describe pod {}", shell_quote(hot))),
            kubectl(format!("kubectl -n {ns} logs {} --since=1h --tail=200", shell_quote(hot))),
            pod_cpu(namespace, deployment),
        ],
    })
}

/// Pods restarted (OOMKilled, crashing) or new around the breach: why.
pub fn find_why_pods_restarted(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.supported(FindingId::PodRestarts)?;
    let Facts::Restarts(facts) = &finding.facts else {
        return None;
    };
    let (namespace, deployment) = workload_names(context.workload?);
    let ns = shell_quote(namespace);
    let failed = facts.pods.iter().find(|p| p.reason != "new pod");
    let (proposal, mut commands) = match failed {
        Some(pod) => {
            let name = shell_quote(&pod.pod);
            let container = pod
                .container
                .as_deref()
                .map(|c| format!(" -c {}", shell_quote(c)))
                .unwrap_or_default();
            (
                format!(
                    "Find out why {} was {}: read its previous container's logs and its events",
                    pod.pod, pod.reason
                ),
                vec![
                    kubectl(format!(
                        "kubectl -n {ns} logs {name}{container} --previous --tail=200"
                    )),
                    kubectl(format!("kubectl -n {ns} describe pod {name}")),
                ],
            )
        }
        None => (
            format!(
                "Check whether {deployment}'s new pods were still warming up when they took traffic"
            ),
            vec![kubectl(format!(
                "kubectl -n {ns} get pods -o wide --sort-by=.metadata.creationTimestamp"
            ))],
        ),
    };
    if failed.is_some_and(|p| p.reason == "OOMKilled") {
        commands.push(promql(format!(
            "max by (pod) (container_memory_working_set_bytes{{namespace=\"{namespace}\", container!=\"\"}})"
        )));
    }
    Some(NextStep {
        proposal,
        rationale: finding.summary.clone(),
        trade_offs: Some(match failed.map(|p| p.reason.as_str()) {
            Some("OOMKilled") => "An OOMKill is fixed by memory (a limit that fits the working set, or a leak), not CPU. The restarted pod then serves cold: warm its caches before it reports ready, or give the target group a slow start (slow_start.duration_seconds) so the ALB ramps its share up.".to_owned(),
            Some(_) => "A crashing pod is fixed by its cause (the previous logs say it); meanwhile it serves cold after each restart: a slow start on the target group (slow_start.duration_seconds) ramps its share up.".to_owned(),
            None => "New pods serve cold: warm caches before reporting ready, or give the target group a slow start (slow_start.duration_seconds).".to_owned(),
        }),
        commands,
    })
}

/// Throttled at the limit: more headroom.
pub fn more_cpu_headroom(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::CpuThrottling)?;
    let (namespace, deployment) = workload_names(context.workload?);
    // Pods that use more than they request overcommit their nodes: the
    // request should follow the usage, not only the limit.
    let request_advice = match context.facts(FindingId::CpuThrottling) {
        Facts::Throttling(t) => t
            .request_cores
            .zip(t.peak_cores)
            .filter(|(request, peak)| peak > request)
            .map(|(request, peak)| {
                format!(
                    "; raise the request from {request} toward {} cores, what the pods use at peak, so the scheduler does not overcommit their nodes",
                    quarter_cores_up(peak)
                )
            })
            .unwrap_or_default(),
        _ => String::new(),
    };
    Some(NextStep {
        proposal: format!(
            "Give {deployment} more CPU headroom (raise or remove the CPU limit){request_advice}"
        ),
        rationale: summary_of(context, FindingId::CpuThrottling),
        trade_offs: Some("A higher limit lets a busy pod take node CPU from its neighbours; with honest requests the scheduler places pods where the CPU is, and the HPA's utilisation means what it says.".to_owned()),
        commands: vec![promql(format!(
            "sum by (pod) (rate(container_cpu_cfs_throttled_periods_total{{namespace=\"{namespace}\"}}[5m])) / sum by (pod) (rate(container_cpu_cfs_periods_total{{namespace=\"{namespace}\"}}[5m]))"
        ))],
    })
}

pub fn add_a_readiness_probe(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::ReadinessProbeMissing)?;
    let (namespace, deployment) = workload_names(context.workload?);
    Some(NextStep {
        proposal: format!("Add a readiness probe to {deployment} on a cheap endpoint, with generous timeouts"),
        rationale: "Without one, a pod gets traffic the moment it starts, before it is ready.".to_owned(),
        trade_offs: Some("On a CPU-bound app a strict probe fails under load and removes pods exactly when they are needed: probe something that does not queue behind the heavy work, with a timeout of several seconds and failureThreshold above 1.".to_owned()),
        commands: vec![kubectl(format!(
            "kubectl -n {} get deployment {} -o jsonpath='{{.spec.template.spec.containers[*].readinessProbe}}'",
            shell_quote(namespace),
            shell_quote(deployment)
        ))],
    })
}

pub fn compare_the_rollout(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::RecentDeploy)?;
    let (namespace, deployment) = workload_names(context.workload?);
    Some(NextStep {
        proposal: format!("Compare the latest rollout of {deployment} with the previous revision"),
        rationale: summary_of(context, FindingId::RecentDeploy),
        trade_offs: Some("Rolling back is a decision for people: confirm the change correlates before undoing it.".to_owned()),
        commands: vec![kubectl(format!(
            "kubectl -n {} rollout history deployment {}",
            shell_quote(namespace),
            shell_quote(deployment)
        ))],
    })
}

pub fn find_why_pods_are_pending(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::PendingPods)?;
    let (namespace, _) = workload_names(context.workload?);
    Some(NextStep {
        proposal: "Find out why pods are pending (node capacity, node group or Karpenter limits)"
            .to_owned(),
        rationale: summary_of(context, FindingId::PendingPods),
        trade_offs: None,
        commands: vec![
            kubectl(format!(
                "kubectl -n {} get pods --field-selector=status.phase=Pending -o wide",
                shell_quote(namespace)
            )),
            kubectl("kubectl describe nodes | grep -A5 'Allocated resources'".to_owned()),
        ],
    })
}

/// CPU-bound pods packed on few nodes compete for them.
pub fn spread_pods_across_nodes(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::WorkerCeiling)?;
    let w = context.workload?;
    let (namespace, deployment) = workload_names(w);
    let nodes: std::collections::BTreeSet<&str> =
        w.pods.iter().filter_map(|p| p.node.as_deref()).collect();
    (w.pods.len() >= 3 && nodes.len() < w.pods.len()).then(|| NextStep {
        proposal: format!("Spread {deployment}'s pods across nodes (soft topology spread)"),
        rationale: format!(
            "{} pods share {} nodes: CPU-bound pods on one node compete for it.",
            w.pods.len(),
            nodes.len()
        ),
        trade_offs: Some(
            "Use whenUnsatisfiable: ScheduleAnyway so a full node never blocks scheduling."
                .to_owned(),
        ),
        commands: vec![kubectl(format!(
            "kubectl -n {} get pods -o wide",
            shell_quote(namespace)
        ))],
    })
}

pub fn treat_as_low_traffic_artifact(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::LowTrafficArtifact)?;
    let alarm = context.alarm;
    let statistic = alarm.evaluated_statistic();
    let percentile = statistic.is_extended();
    let (rationale, trade_offs) = if percentile {
        (
            format!(
                "At this traffic a {statistic} is the slowest request or two of each period; nothing suggests users at large were affected."
            ),
            format!(
                "More datapoints to alarm do not help a {statistic} over too few requests: set EvaluateLowSampleCountPercentile to ignore (CloudWatch then skips periods with too few samples), or guard it with metric math on RequestCount; either also hides slowness at night, so look at the slow requests first."
            ),
        )
    } else {
        (
            "A handful of slow requests moved the Average of a near-idle target; nothing suggests users at large were affected.".to_owned(),
            "A metric-math alarm such as IF(requests > 60, latency, 0), or p99 with M of N datapoints, stops these pages but also hides slowness at night; check the slow requests first.".to_owned(),
        )
    };
    Some(NextStep {
        proposal:
            "Treat this breach as a low-traffic artifact; make the alarm require real traffic"
                .to_owned(),
        rationale,
        trade_offs: Some(trade_offs),
        commands: vec![aws(format!(
            "aws cloudwatch describe-alarms --alarm-names {} --query 'MetricAlarms[0].[Statistic,ExtendedStatistic,Threshold,EvaluationPeriods,DatapointsToAlarm,TreatMissingData,EvaluateLowSampleCountPercentile]' --output table{}",
            shell_quote(&alarm.name),
            region_flag(alarm)
        ))],
    })
}

/// Slow while idle: look at what the service waits on.
pub fn look_downstream(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.supported(FindingId::DownstreamWait)?;
    let (namespace, deployment) = workload_names(context.workload?);
    let ns = shell_quote(namespace);
    let name = shell_quote(deployment);
    Some(NextStep {
        proposal: format!(
            "Look at what {deployment} waits on (database, cache, other services, connection pools): its pods idle while requests are slow"
        ),
        rationale: finding.summary.clone(),
        trade_offs: Some("More pods or CPU will not help a service that waits; more pods can even make a struggling database worse.".to_owned()),
        commands: vec![
            kubectl(format!(
                "kubectl -n {ns} logs deployment/{name} --since=30m --all-containers | grep -iE 'timeout|timed out|deadline|pool|refused|slow' | tail -50"
            )),
            kubectl(format!(
                "kubectl -n {ns} get deployment {name} -o jsonpath='{{.spec.template.spec.containers[*].env[*].name}}'"
            )),
        ],
    })
}

pub fn find_why_targets_are_unhealthy(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::UnhealthyTargets)?;
    let region = region_flag(context.alarm);
    let commands = context
        .target_groups
        .iter()
        .filter(|g| !g.unhealthy_targets.is_empty())
        .map(|g| {
            aws(format!(
                "aws elbv2 describe-target-health --target-group-arn {} --query 'TargetHealthDescriptions[?TargetHealth.State!=`healthy`]' --output table{region}",
                shell_quote(&g.arn)
            ))
        })
        .collect();
    Some(NextStep {
        proposal: "Find out why targets fail their health checks".to_owned(),
        rationale: "Unhealthy targets shrink the capacity serving traffic; the reason (Target.Timeout, Target.ResponseCodeMismatch) says where to look.".to_owned(),
        trade_offs: None,
        commands,
    })
}

pub fn consider_least_outstanding_requests(context: &Context<'_>) -> Option<NextStep> {
    // Routing spreads requests, so it only helps requests that wait: latency alarms.
    if context.alarm.family() != MetricFamily::Latency {
        return None;
    }
    context.supported(FindingId::LeastOutstandingRequests)?;
    let group = context.culprits().next()?;
    Some(NextStep {
        proposal: format!("Consider least outstanding requests routing for {}", group.name),
        rationale: "In ip mode the ALB picks the pod; least outstanding requests sends new requests to pods with the fewest in flight, away from a slow one.".to_owned(),
        trade_offs: Some("It adds no capacity and does not fix the slow pod; with few targets a pod that just became healthy can receive a burst.".to_owned()),
        commands: vec![aws(format!(
            "aws elbv2 describe-target-group-attributes --target-group-arn {} --query \"Attributes[?Key=='load_balancing.algorithm.type']\" --output table{}",
            shell_quote(&group.arn),
            region_flag(context.alarm)
        ))],
    })
}

pub fn look_at_what_groups_share(context: &Context<'_>) -> Option<NextStep> {
    context.supported(FindingId::SharedLoadBalancerProblem)?;
    // A change to what they share already says where to look: its own step.
    if context.cause(FindingId::ConfigurationChange).is_some() {
        return None;
    }
    let symptom = context.alarm.family().symptom();
    Some(NextStep {
        proposal: format!("Look at what the target groups that are {symptom} share: the load balancer, the ingress, the nodes' network, or a common dependency"),
        rationale: "Most groups breach at once, which one service cannot explain.".to_owned(),
        trade_offs: None,
        commands: context
            .alarm
            .dimension("LoadBalancer")
            .and_then(load_balancer_name)
            .map(|lb| aws(format!(
                "aws elbv2 describe-load-balancers --names {} --query 'LoadBalancers[0].[State.Code,Type,Scheme]' --output table{}",
                shell_quote(lb),
                region_flag(context.alarm)
            )))
            .into_iter()
            .collect(),
    })
}

/// The kind of load balancer the alarm's metric belongs to, if any.
fn load_balancer_family(context: &Context<'_>) -> Option<&'static LoadBalancerFamily> {
    family::for_namespace(context.alarm.namespace()?)
}

/// A load-balancer-wide alarm the bot could not break down: how to do it by hand.
pub fn break_down_per_target_group(context: &Context<'_>) -> Option<NextStep> {
    let alarm = context.alarm;
    let lb = alarm.dimension("LoadBalancer")?;
    let family = load_balancer_family(context)?;
    if !context.target_groups.is_empty() || alarm.dimension("TargetGroup").is_some() {
        return None;
    }
    let region = region_flag(alarm);
    let metric = alarm.metric_name().unwrap_or("TargetResponseTime");
    let mut commands = Vec::new();
    if let Some(lb_name) = load_balancer_name(lb) {
        commands.push(aws(format!(
            "aws elbv2 describe-target-groups --load-balancer-arn \"$(aws elbv2 describe-load-balancers --names {} --query 'LoadBalancers[0].LoadBalancerArn' --output text{region})\" --query 'TargetGroups[].[TargetGroupName,TargetType,Protocol,Port]' --output table{region}",
            shell_quote(lb_name)
        )));
    }
    let search = format!(
        "SEARCH('{{{},LoadBalancer,TargetGroup}} MetricName=\"{metric}\" LoadBalancer=\"{lb}\"', '{}', {})",
        family.namespace,
        alarm.evaluated_statistic(),
        alarm.period()
    );
    let queries =
        serde_json::json!([{ "Id": "per_target_group", "Expression": search }]).to_string();
    commands.push(aws(format!(
        "aws cloudwatch get-metric-data --metric-data-queries {} --start-time {} --end-time {} --query 'MetricDataResults[].[Label,max(Values)]' --output table{region}",
        shell_quote(&queries),
        iso(crate::instants::earlier(context.now, Duration::hours(3))),
        iso(context.now),
    )));
    Some(NextStep {
        proposal: "Break the metric down per target group to find the service behind the alarm".to_owned(),
        rationale: "The alarm watches the whole load balancer; one slow target group with the others normal clears the shared ALB and ingress and names the service.".to_owned(),
        trade_offs: None,
        commands,
    })
}

/// An ALB-wide Average latency alarm: per-group p99 says more, once the cause is fixed.
pub fn alarm_on_p99_per_target_group(context: &Context<'_>) -> Option<NextStep> {
    let alarm = context.alarm;
    (load_balancer_family(context).is_some_and(|f| f.latency.is_some())
        && alarm.family() == MetricFamily::Latency
        && alarm.statistic == Some(Statistic::Average)
        // A statistic step of its own follows outliers; nothing changed: the threshold's.
        && context.supported(FindingId::LatencyOutliers).is_none()
        && context.cause(FindingId::ThresholdInsideNormalRange).is_none())
    .then(|| NextStep {
        proposal: "Once the cause is fixed, consider alarming on p99 per target group instead of the ALB-wide Average".to_owned(),
        rationale: if context.supported(FindingId::LowTrafficArtifact).is_some() {
            "An ALB-wide Average mixes fast and slow services and is pushed over its threshold by a few slow requests at low traffic; per-group p99 points at the service and measures what users feel.".to_owned()
        } else {
            "An ALB-wide Average mixes fast and slow services, so a slow one is diluted by the fast ones; per-group p99 points at the service and measures what users feel.".to_owned()
        },
        trade_offs: Some("p99 is noisier at low request counts: pair it with M-of-N datapoints (e.g. 3 of 5) and a minimum RequestCount; tuning the alarm before the cause is known only hides it.".to_owned()),
        commands: vec![],
    })
}

/// Nothing changed and the alarm fires on the metric's usual level: the
/// alarm is what to look at, with the weeks of data that show its range.
pub fn revisit_the_threshold(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::ThresholdInsideNormalRange)?;
    let alarm = context.alarm;
    let mut commands = vec![aws(format!(
        "aws cloudwatch describe-alarms --alarm-names {} --query 'MetricAlarms[].[Threshold,ComparisonOperator,Statistic,ExtendedStatistic,Period,EvaluationPeriods]' --output table{}",
        shell_quote(&alarm.name),
        region_flag(alarm)
    ))];
    if let Some(watched) = &alarm.watched {
        let (namespace, metric) = (&watched.namespace, &watched.name);
        let dimensions = watched
            .dimensions
            .iter()
            .map(|d| shell_quote(&format!("Name={},Value={}", d.name, d.value)))
            .collect::<Vec<_>>()
            .join(" ");
        let statistic = alarm.evaluated_statistic();
        let statistic_flag = if statistic.is_extended() {
            format!(
                "--extended-statistics {}",
                shell_quote(&statistic.to_string())
            )
        } else {
            format!("--statistics {}", shell_quote(&statistic.to_string()))
        };
        commands.push(aws(format!(
            "aws cloudwatch get-metric-statistics --namespace {} --metric-name {} --dimensions {dimensions} {statistic_flag} --period 3600 --start-time {} --end-time {}{}",
            shell_quote(namespace),
            shell_quote(metric),
            iso(crate::instants::earlier(context.now, Duration::days(14))),
            iso(context.now),
            region_flag(alarm)
        )));
    }
    Some(NextStep {
        proposal: format!(
            "Revisit {}'s threshold with the service's owners: it fires on the metric's usual level",
            alarm.name
        ),
        rationale: finding.summary.clone(),
        trade_offs: Some("Raising the threshold above the usual range (or alarming on a per-group percentile with M of N datapoints) keeps pages for real changes; if the usual level is itself too slow for users, the service needs the work, not the alarm.".to_owned()),
        commands,
    })
}

/// An Average pushed over by a minority of slow requests (long polls,
/// exports): the alarm measures the wrong thing. A percentile the slow
/// share does not dominate, a trimmed mean, or the route on its own alarm.
pub fn reconsider_the_alarms_statistic(context: &Context<'_>) -> Option<NextStep> {
    let alarm = context.alarm;
    if alarm.statistic != Some(Statistic::Average) || alarm.family() != MetricFamily::Latency {
        return None;
    }
    let finding = context.supported(FindingId::LatencyOutliers)?;
    let threshold = alarm.threshold?;
    // More than 1 % of requests slower than the threshold: p99 would breach too.
    let p99 = finding
        .evidence
        .iter()
        .find(|e| e.name.starts_with("p99 while breaching"))
        .and_then(|e| e.value.as_f64());
    let tail_is_slow = p99.is_some_and(|v| v > threshold);
    let (proposal, rationale) = if tail_is_slow {
        (
            format!(
                "Change {}'s statistic: alarm on p90 or a trimmed mean (tm90) instead of the Average, or give the slow route an alarm of its own",
                alarm.name
            ),
            format!(
                "{} More than 1 % of requests are slower than the threshold (p99 {}), so p99 would fire as well: only a statistic the slow share does not reach, or a separate alarm for the slow route, measures what most users feel.",
                finding.summary,
                p99.map_or("?".to_owned(), |v| format!("{v} s"))
            ),
        )
    } else {
        (
            format!(
                "Change {}'s statistic: alarm on a trimmed mean (tm99) or p99 instead of the Average",
                alarm.name
            ),
            format!(
                "{} A trimmed mean leaves out the few slowest requests that drive the Average; p99 watches them on purpose, with its own threshold.",
                finding.summary
            ),
        )
    };
    Some(NextStep {
        proposal,
        rationale,
        trade_offs: Some("A statistic that ignores the slow minority also hides it getting slower: keep it visible on a dashboard, or alarm on it with its own threshold.".to_owned()),
        commands: vec![aws(format!(
            "aws cloudwatch describe-alarms --alarm-names {} --query 'MetricAlarms[].[Statistic,ExtendedStatistic,Threshold]' --output table{}",
            shell_quote(&alarm.name),
            region_flag(alarm)
        ))],
    })
}

/// A rollout whose new pods were cold: at their CPU limit or failing their
/// probes while they warmed up. Let them warm before they take full traffic.
pub fn warm_up_new_pods(context: &Context<'_>) -> Option<NextStep> {
    let deploy = context.cause(FindingId::RecentDeploy)?;
    let workload = context.workload?;
    let rollout = workload.last_rollout?;
    let new_pods: Vec<&str> = workload
        .pods
        .iter()
        .filter(|p| p.running_since.is_some_and(|t| t >= rollout))
        .map(|p| p.name.as_str())
        .collect();
    let at_limit: Vec<&str> = match context.facts(FindingId::CpuThrottling) {
        Facts::Throttling(t) => t
            .pods_at_limit
            .iter()
            .map(String::as_str)
            .filter(|p| new_pods.contains(p))
            .collect(),
        _ => Vec::new(),
    };
    // Cold is busy: a new pod that fails its probes while idle has another
    // problem (a wrong probe path, a missing dependency), not a warm-up.
    let probes_failing = context.cause(FindingId::ProbeFailures).is_some();
    if new_pods.is_empty() || at_limit.is_empty() {
        return None;
    }
    let (ns, deployment) = workload_names(workload);
    let group = context.culprits().next();
    let mut commands = vec![kubectl(format!(
        "kubectl -n {} get deployment {} -o jsonpath='{{.spec.minReadySeconds}} {{range .spec.template.spec.containers[*]}}{{.name}}: startup={{.startupProbe}} readiness={{.readinessProbe}}{{\"\\n\"}}{{end}}'",
        shell_quote(ns),
        shell_quote(deployment)
    ))];
    if let Some(group) = group {
        commands.push(aws(format!(
            "aws elbv2 describe-target-group-attributes --target-group-arn {} --query \"Attributes[?Key=='slow_start.duration_seconds']\" --output table{}",
            shell_quote(&group.arn),
            region_flag(context.alarm)
        )));
    }
    let slow_start = match group.and_then(|g| g.slow_start_seconds) {
        Some(0) => {
            " Slow start is off on the target group: each new pod got its full share at once."
        }
        Some(_) => " Slow start is already on: it ramps requests, not the pods' warm-up work.",
        None => "",
    };
    let ramp = if group
        .and_then(|g| g.slow_start_seconds)
        .is_some_and(|s| s > 0)
    {
        "a startup probe, minReadySeconds, readiness that waits for warm caches (slow start is already on)"
    } else {
        "ALB slow start on the target group, a startup probe, minReadySeconds, readiness that waits for warm caches"
    };
    Some(NextStep {
        proposal: format!(
            "Let {deployment}'s new pods warm up before they take full traffic: {ramp}"
        ),
        rationale: format!(
            "{} The new pods {} while they warmed up.{slow_start}",
            deploy.summary,
            if probes_failing {
                format!(
                    "sat at their CPU limit ({}) and failed their probes",
                    at_limit.join(", ")
                )
            } else {
                format!("sat at their CPU limit ({})", at_limit.join(", "))
            }
        ),
        trade_offs: Some("Slow start and minReadySeconds lengthen every rollout; a startup probe only helps if the app reports warm-up honestly. A surge of extra pods during the rollout (maxSurge) spreads the cold start.".to_owned()),
        commands,
    })
}

/// The HPA removes pods the traffic still needs: slow its scale-in.
pub fn slow_the_hpas_scale_in(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::HpaScalesInTooEagerly)?;
    let workload = context.workload?;
    let hpa = workload.hpa.as_deref()?;
    let ns = shell_quote(&workload.namespace);
    let name = shell_quote(hpa);
    Some(NextStep {
        proposal: format!(
            "Slow {hpa}'s scale-in: behavior.scaleDown with a longer stabilizationWindowSeconds (e.g. 600 s) and a policy that removes few pods at a time (e.g. 10 % a minute), or a minReplicas that carries the troughs"
        ),
        rationale: finding.summary.clone(),
        trade_offs: Some("A slower scale-in keeps pods (and cost) for a while after each peak; a higher minReplicas keeps them always. Scaling out faster does not help: the breach comes from the pods removed, not from those added too late.".to_owned()),
        commands: vec![
            kubectl(format!(
                "kubectl -n {ns} get hpa {name} -o jsonpath='{{.spec.behavior}}{{\"\\n\"}}{{.spec.minReplicas}}-{{.spec.maxReplicas}}{{\"\\n\"}}'"
            )),
            kubectl(format!(
                "kubectl -n {ns} get events --field-selector involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name={hpa} --sort-by=.lastTimestamp"
            )),
            promql(format!(
                "count(kube_pod_info{{namespace=\"{}\", created_by_kind=\"ReplicaSet\"}})",
                workload.namespace
            )),
        ],
    })
}
