//! Next steps: proposals for people with the read-only commands that confirm
//! them. Nothing here (or anywhere in the bot) changes AWS or Kubernetes.

use chrono::{DateTime, Duration, SecondsFormat, Utc};

use crate::classify::{Behaviour, Classification};
use crate::diagnosis::{AlarmFacts, Command, NextStep, ReportKind, Verdict};
use crate::evidence::model::load_balancer_name;
use crate::findings::Decided;

/// Quotes a value for a POSIX shell, so names from an alarm cannot break out of a command.
pub fn shell_quote(value: &str) -> String {
    if !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        return value.to_owned();
    }
    format!("'{}'", value.replace('\'', r"'\''"))
}

fn aws(text: String) -> Command {
    Command {
        tool: "aws".to_owned(),
        text,
    }
}

fn kubectl(text: String) -> Command {
    Command {
        tool: "kubectl".to_owned(),
        text,
    }
}

fn promql(text: String) -> Command {
    Command {
        tool: "promql".to_owned(),
        text,
    }
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn region_flag(alarm: &AlarmFacts) -> String {
    alarm
        .region
        .as_deref()
        .map(|r| format!(" --region {}", shell_quote(r)))
        .unwrap_or_default()
}

/// Proposals that follow from what is known about the alarm and its behaviour.
pub fn propose(
    alarm: &AlarmFacts,
    classification: &Classification,
    decided: &Decided,
    kind: ReportKind,
    now: DateTime<Utc>,
) -> Vec<NextStep> {
    let verdict = |id: &str| {
        decided
            .findings
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.verdict)
    };
    let region = region_flag(alarm);
    let name = shell_quote(&alarm.name);
    let mut steps = Vec::new();

    let history_command = aws(format!(
        "aws cloudwatch describe-alarm-history --alarm-name {name} --history-item-type StateUpdate --start-date {} --end-date {} --query 'AlarmHistoryItems[].[Timestamp,HistorySummary]' --output table{region}",
        iso(crate::instants::earlier(now, Duration::hours(24))),
        iso(now),
    ));

    if kind == ReportKind::Resolution {
        let (proposal, rationale) = if classification.behaviour == Behaviour::Flapping {
            (
                "Treat this recovery as a pause, not a fix: keep the investigation open",
                "The alarm is flapping; it has recovered before and came back each time.",
            )
        } else {
            (
                "Confirm that the recovery holds and note the episode in the on-call log",
                "A single episode that cleared by itself needs no action unless it repeats.",
            )
        };
        steps.push(NextStep {
            proposal: proposal.to_owned(),
            rationale: rationale.to_owned(),
            trade_offs: None,
            commands: vec![history_command],
        });
        return steps;
    }

    if classification.behaviour == Behaviour::Flapping {
        steps.push(NextStep {
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
            commands: vec![history_command.clone()],
        });
    }

    let is_alb = alarm.namespace.as_deref() == Some("AWS/ApplicationELB");
    let lb_dimension = alarm.dimension("LoadBalancer");
    let culprits: Vec<&crate::findings::alb::TargetGroupSummary> =
        decided.target_groups.iter().filter(|g| g.culprit).collect();
    for group in &culprits {
        let mut commands = vec![aws(format!(
            "aws elbv2 describe-target-health --target-group-arn {} --output table{region}",
            shell_quote(&group.arn)
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
        steps.push(NextStep {
            proposal: format!(
                "Investigate {}, the target group behind the alarm",
                group.label()
            ),
            rationale: format!(
                "It accounts for {} of the breach{}.",
                group
                    .share_of_breach
                    .map_or("most".to_owned(), |s| format!("{:.0} %", s * 100.0)),
                group
                    .statistic_while_breaching
                    .map(|v| format!(
                        " with {} {v} while breaching (threshold {})",
                        alarm.statistic.as_deref().unwrap_or("value"),
                        alarm.threshold.unwrap_or_default()
                    ))
                    .unwrap_or_default()
            ),
            trade_offs: None,
            commands,
        });
    }

    if let Some(w) = &decided.workload {
        let ns = shell_quote(&w.namespace);
        let deployment = w.deployment.clone().unwrap_or_else(|| w.service.clone());
        let deploy = shell_quote(&deployment);
        let finding = |id: &str| decided.findings.iter().find(|f| f.id == id);
        let cpu_query = format!(
            "max_over_time(sum by (pod) (rate(container_cpu_usage_seconds_total{{namespace=\"{}\", pod=~\"{}-.*\", container!=\"\"}}[2m]))[3h:1m])",
            w.namespace, deployment
        );
        let limit = w.pods.iter().find_map(|p| p.cpu_limit);
        let plateau = w
            .pods
            .iter()
            .filter_map(|p| p.cpu_while_breaching)
            .fold(0.0_f64, f64::max);
        if verdict("pods.worker_ceiling") == Some(Verdict::Supported) {
            let workers = plateau.round().max(1.0);
            steps.push(NextStep {
                proposal: format!(
                    "Run more workers per pod in {deployment} (e.g. {} instead of {workers:.0}) and raise the CPU limit to match",
                    workers * 2.0
                ),
                rationale: format!(
                    "Each pod tops out at {plateau:.2} cores{}: one CPU-bound worker serves one heavy request at a time and the rest queue. More workers per pod raise the fleet's concurrency without more pods.",
                    limit.map(|l| format!(" of its {l}-core limit")).unwrap_or_default()
                ),
                trade_offs: Some(format!(
                    "{} workers need about {:.1} cores at peak: set the limit (e.g. {:.0}m) and the request accordingly, and expect more memory per pod; more pods (HPA) is the other lever.",
                    workers * 2.0,
                    workers * 2.0 * plateau.max(0.5),
                    (workers * 2.0 * 1000.0).max(limit.unwrap_or(0.0) * 1000.0)
                )),
                commands: vec![
                    kubectl(format!("kubectl -n {ns} get deployment {deploy} -o jsonpath='{{.spec.template.spec.containers[*].args}}'")),
                    promql(cpu_query.clone()),
                ],
            });
        }
        if verdict("hpa.cannot_react") == Some(Verdict::Supported) {
            let hpa = w.hpa.clone().unwrap_or_else(|| deployment.clone());
            let finding = finding("hpa.cannot_react");
            let rationale = finding.map(|f| f.summary.clone()).unwrap_or_default();
            // The utilisation the HPA computes (mean over pods of usage / request) at its peak.
            let peak = finding
                .and_then(|f| {
                    f.evidence
                        .iter()
                        .find(|e| e.name.starts_with("peak utilisation"))
                })
                .and_then(|e| e.value.as_f64());
            let imbalanced = verdict("pods.imbalance") == Some(Verdict::Supported);
            let proposal = match (&w.hpa, peak) {
                (Some(_), Some(_)) if imbalanced => {
                    "Do not count on the HPA here: the mean it scales on hides the one hot pod; fix that pod first".to_owned()
                }
                (Some(_), Some(peak)) => format!(
                    "Lower the HPA's CPU target to about {:.0} % so that the {peak:.0} % the pods can reach triggers scaling",
                    (peak * 0.75 / 5.0).floor() * 5.0
                ),
                (Some(_), None) => "Make the HPA able to see the load (CPU requests set, a target the pods can reach)".to_owned(),
                (None, _) => format!("Consider an HPA for {deployment}"),
            };
            steps.push(NextStep {
                proposal,
                rationale,
                trade_offs: Some("A lower target keeps more pods running at rest (cost); raise maxReplicas with it so scaling has room; autoscaling/v2 can also scale on request rate per target.".to_owned()),
                commands: vec![
                    kubectl(format!("kubectl -n {ns} describe hpa {}", shell_quote(&hpa))),
                    kubectl(format!("kubectl -n {ns} get hpa {} -o yaml", shell_quote(&hpa))),
                ],
            });
        }
        if verdict("pods.imbalance") == Some(Verdict::Supported) {
            let hot = w
                .pods
                .iter()
                .max_by(|a, b| {
                    a.cpu_while_breaching
                        .unwrap_or(0.0)
                        .total_cmp(&b.cpu_while_breaching.unwrap_or(0.0))
                })
                .map(|p| p.name.clone())
                .unwrap_or_default();
            steps.push(NextStep {
                proposal: format!("Find out why {hot} is hot while the other pods idle"),
                rationale: finding("pods.imbalance").map(|f| f.summary.clone()).unwrap_or_default(),
                trade_offs: Some("Restarting the pod may clear it but destroys the evidence: look first (logs, stuck work, a hot key or long-lived connections).".to_owned()),
                commands: vec![
                    kubectl(format!("kubectl -n {ns} describe pod {}", shell_quote(&hot))),
                    kubectl(format!("kubectl -n {ns} logs {} --since=1h --tail=200", shell_quote(&hot))),
                    promql(cpu_query.clone()),
                ],
            });
        }
        if verdict("pods.throttling") == Some(Verdict::Supported) {
            steps.push(NextStep {
                proposal: format!("Give {deployment} more CPU headroom (raise or remove the CPU limit)"),
                rationale: finding("pods.throttling").map(|f| f.summary.clone()).unwrap_or_default(),
                trade_offs: Some("A higher limit lets a busy pod take node CPU from its neighbours; keep requests honest so the scheduler places pods well.".to_owned()),
                commands: vec![promql(format!(
                    "sum by (pod) (rate(container_cpu_cfs_throttled_periods_total{{namespace=\"{}\"}}[5m])) / sum by (pod) (rate(container_cpu_cfs_periods_total{{namespace=\"{}\"}}[5m]))",
                    w.namespace, w.namespace
                ))],
            });
        }
        if verdict("pods.readiness_probe_missing") == Some(Verdict::Supported) {
            steps.push(NextStep {
                proposal: format!("Add a readiness probe to {deployment} on a cheap endpoint, with generous timeouts"),
                rationale: "Without one, a pod gets traffic the moment it starts, before it is ready.".to_owned(),
                trade_offs: Some("On a CPU-bound app a strict probe fails under load and removes pods exactly when they are needed: probe something that does not queue behind the heavy work, with a timeout of several seconds and failureThreshold above 1.".to_owned()),
                commands: vec![kubectl(format!(
                    "kubectl -n {ns} get deployment {deploy} -o jsonpath='{{.spec.template.spec.containers[*].readinessProbe}}'"
                ))],
            });
        }
        if verdict("deploy.recent_change") == Some(Verdict::Supported) {
            steps.push(NextStep {
                proposal: format!("Compare the latest rollout of {deployment} with the previous revision"),
                rationale: finding("deploy.recent_change").map(|f| f.summary.clone()).unwrap_or_default(),
                trade_offs: Some("Rolling back is a decision for people: confirm the change correlates before undoing it.".to_owned()),
                commands: vec![kubectl(format!("kubectl -n {ns} rollout history deployment {deploy}"))],
            });
        }
        if verdict("capacity.pending_pods") == Some(Verdict::Supported) {
            steps.push(NextStep {
                proposal:
                    "Find out why pods are pending (node capacity, node group or Karpenter limits)"
                        .to_owned(),
                rationale: finding("capacity.pending_pods")
                    .map(|f| f.summary.clone())
                    .unwrap_or_default(),
                trade_offs: None,
                commands: vec![
                    kubectl(format!(
                        "kubectl -n {ns} get pods --field-selector=status.phase=Pending -o wide"
                    )),
                    kubectl("kubectl describe nodes | grep -A5 'Allocated resources'".to_owned()),
                ],
            });
        }
        let nodes: std::collections::BTreeSet<&str> =
            w.pods.iter().filter_map(|p| p.node.as_deref()).collect();
        if w.pods.len() >= 3
            && nodes.len() < w.pods.len()
            && verdict("pods.worker_ceiling") == Some(Verdict::Supported)
        {
            steps.push(NextStep {
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
                commands: vec![kubectl(format!("kubectl -n {ns} get pods -o wide"))],
            });
        }
    }

    if verdict("traffic.low_traffic_artifact") == Some(Verdict::Supported) {
        steps.push(NextStep {
            proposal: "Treat this breach as a low-traffic artifact; make the alarm require real traffic".to_owned(),
            rationale: "A handful of slow requests moved the Average of a near-idle target; nothing suggests users at large were affected.".to_owned(),
            trade_offs: Some("A metric-math alarm such as IF(requests > 60, latency, 0), or p99 with M of N datapoints, stops these pages but also hides slowness at night; check the slow requests first.".to_owned()),
            commands: vec![aws(format!(
                "aws cloudwatch describe-alarms --alarm-names {name} --query 'MetricAlarms[0].[Statistic,Threshold,EvaluationPeriods,DatapointsToAlarm,TreatMissingData]' --output table{region}"
            ))],
        });
    }

    if verdict("targets.unhealthy") == Some(Verdict::Supported) {
        let commands = decided
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
        steps.push(NextStep {
            proposal: "Find out why targets fail their health checks".to_owned(),
            rationale: "Unhealthy targets shrink the capacity serving traffic; the reason (Target.Timeout, Target.ResponseCodeMismatch) says where to look.".to_owned(),
            trade_offs: None,
            commands,
        });
    }

    if verdict("alb.least_outstanding_requests") == Some(Verdict::Supported)
        && let Some(group) = culprits.first()
    {
        steps.push(NextStep {
                proposal: format!("Consider least outstanding requests routing for {}", group.name),
                rationale: "In ip mode the ALB picks the pod; least outstanding requests sends new requests to pods with the fewest in flight, away from a slow one.".to_owned(),
                trade_offs: Some("It adds no capacity and does not fix the slow pod; with few targets a pod that just became healthy can receive a burst.".to_owned()),
                commands: vec![aws(format!(
                    "aws elbv2 describe-target-group-attributes --target-group-arn {} --query \"Attributes[?Key=='load_balancing.algorithm.type']\" --output table{region}",
                    shell_quote(&group.arn)
                ))],
            });
    }

    if verdict("alb.shared_problem") == Some(Verdict::Supported) {
        steps.push(NextStep {
            proposal: "Look at what the slow target groups share: the load balancer, the ingress, or a common dependency".to_owned(),
            rationale: "Most groups breach at once, which one service cannot explain.".to_owned(),
            trade_offs: None,
            commands: lb_dimension
                .and_then(load_balancer_name)
                .map(|lb| aws(format!(
                    "aws elbv2 describe-load-balancers --names {} --query 'LoadBalancers[0].[State.Code,Type,Scheme]' --output table{region}",
                    shell_quote(lb)
                )))
                .into_iter()
                .collect(),
        });
    }

    let breakdown_done = !decided.target_groups.is_empty();
    if let (true, false, Some(lb), None) = (
        is_alb,
        breakdown_done,
        lb_dimension,
        alarm.dimension("TargetGroup"),
    ) {
        let metric = alarm.metric_name.as_deref().unwrap_or("TargetResponseTime");
        let mut commands = Vec::new();
        if let Some(lb_name) = load_balancer_name(lb) {
            commands.push(aws(format!(
                "aws elbv2 describe-target-groups --load-balancer-arn \"$(aws elbv2 describe-load-balancers --names {} --query 'LoadBalancers[0].LoadBalancerArn' --output text{region})\" --query 'TargetGroups[].[TargetGroupName,TargetType,Protocol,Port]' --output table{region}",
                shell_quote(lb_name)
            )));
        }
        let search = format!(
            "SEARCH('{{AWS/ApplicationELB,LoadBalancer,TargetGroup}} MetricName=\"{metric}\" LoadBalancer=\"{lb}\"', '{}', {})",
            alarm.statistic.as_deref().unwrap_or("Average"),
            alarm.period_seconds.unwrap_or(60)
        );
        let queries =
            serde_json::json!([{ "Id": "per_target_group", "Expression": search }]).to_string();
        commands.push(aws(format!(
            "aws cloudwatch get-metric-data --metric-data-queries {} --start-time {} --end-time {} --query 'MetricDataResults[].[Label,max(Values)]' --output table{region}",
            shell_quote(&queries),
            iso(crate::instants::earlier(now, Duration::hours(3))),
            iso(now),
        )));
        steps.push(NextStep {
            proposal: "Break the metric down per target group to find the service behind the alarm".to_owned(),
            rationale: "The alarm watches the whole load balancer; one slow target group with the others normal clears the shared ALB and ingress and names the service.".to_owned(),
            trade_offs: None,
            commands,
        });
    }

    if is_alb
        && alarm.metric_name.as_deref() == Some("TargetResponseTime")
        && alarm.statistic.as_deref() == Some("Average")
    {
        steps.push(NextStep {
            proposal: "Once the cause is fixed, consider alarming on p99 per target group instead of the ALB-wide Average".to_owned(),
            rationale: "An ALB-wide Average mixes fast and slow services and can be pushed over the threshold by a few slow requests at low traffic; per-group p99 points at the service and measures what users feel.".to_owned(),
            trade_offs: Some("p99 is noisier at low request counts: pair it with M-of-N datapoints (e.g. 3 of 5) and a minimum RequestCount; tuning the alarm before the cause is known only hides it.".to_owned()),
            commands: vec![],
        });
    }

    if steps.is_empty() {
        steps.push(NextStep {
            proposal: "Read the alarm's recent history and the metric around the transition".to_owned(),
            rationale: "No specialised enrichment exists yet for this kind of alarm; the history tells whether this is new.".to_owned(),
            trade_offs: None,
            commands: vec![history_command],
        });
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_leaves_plain_names_and_wraps_the_rest() {
        assert_eq!(shell_quote("k8s-shop-latency"), "k8s-shop-latency");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("x'; rm -rf /"), r"'x'\''; rm -rf /'");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
        assert_eq!(shell_quote(""), "''");
    }
}
