//! Proposals for the error, health-check, probe and node-capacity findings:
//! where the 5xx come from, a health check stricter than the app under load,
//! failing probes, and an autoscaler that cannot add nodes.

use super::Context;
use super::commands::{aws, iso, kubectl, region_flag, shell_quote};
use crate::diagnosis::{Facts, FindingId, NextStep};
use crate::findings::probes::ProbeTrouble;

fn namespace_and_deployment<'a>(context: &Context<'a>) -> Option<(&'a str, &'a str)> {
    let w = context.workload?;
    Some((
        &w.namespace,
        w.deployment.as_deref().unwrap_or(w.service.as_str()),
    ))
}

/// The application fails requests: its logs and the rollout say why. When
/// the logs were read and a new error named, [`read_the_new_error`] says it
/// instead: grepping for "error" again would only repeat it.
pub fn read_the_failing_requests(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::TargetErrors)?;
    if context.cause(FindingId::NewLogErrors).is_some() {
        return None;
    }
    let mut commands = Vec::new();
    if let Some((namespace, deployment)) = namespace_and_deployment(context) {
        let ns = shell_quote(namespace);
        let name = shell_quote(deployment);
        commands.push(kubectl(format!(
            "kubectl -n {ns} logs deployment/{name} --since=30m --all-containers | grep -iE ' 5[0-9]{{2}} |error|exception' | tail -50"
        )));
        commands.push(kubectl(format!(
            "kubectl -n {ns} rollout history deployment {name}"
        )));
    }
    if let Some(group) = context.culprits().next() {
        commands.push(aws(format!(
            "aws cloudwatch get-metric-statistics --namespace AWS/ApplicationELB --metric-name HTTPCode_Target_5XX_Count --dimensions Name=TargetGroup,Value={} --statistics Sum --period 60 --start-time $(date -u -d '-1 hour' +%FT%TZ) --end-time $(date -u +%FT%TZ){}",
            shell_quote(group.arn.rsplit_once(':').map_or(group.arn.as_str(), |(_, tail)| tail)),
            region_flag(context.alarm)
        )));
    }
    Some(NextStep {
        proposal: "Read what the application logs for the failing requests, and whether they began with a rollout".to_owned(),
        rationale: finding.summary.clone(),
        trade_offs: Some("A rollback undoes a bad release quickly, but it is a decision for people: confirm that the errors began with the new revision first.".to_owned()),
        commands,
    })
}

/// The load balancer answers 5xx itself: the code says where to look.
pub fn find_what_the_load_balancer_rejects(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::LoadBalancerErrors)?;
    let region = region_flag(context.alarm);
    let mut commands: Vec<_> = context
        .target_groups
        .iter()
        .filter(|g| g.culprit || g.targets_healthy == Some(0))
        .map(|g| {
            aws(format!(
                "aws elbv2 describe-target-health --target-group-arn {} --output table{region}",
                shell_quote(&g.arn)
            ))
        })
        .collect();
    if let Some(lb) = context.alarm.dimension("LoadBalancer") {
        commands.push(aws(format!(
            "aws cloudwatch get-metric-statistics --namespace AWS/ApplicationELB --metric-name HTTPCode_ELB_5XX_Count --dimensions Name=LoadBalancer,Value={} --statistics Sum --period 60 --start-time $(date -u -d '-1 hour' +%FT%TZ) --end-time $(date -u +%FT%TZ){region}",
            shell_quote(lb)
        )));
    }
    Some(NextStep {
        proposal: "Find out why the load balancer answers instead of the targets (503: no healthy target; 504: too slow for the idle timeout; 502: connections broken)".to_owned(),
        rationale: finding.summary.clone(),
        trade_offs: Some("The access logs (if enabled) give each 5xx's target and error reason; raising the idle timeout only hides a 504 if the targets are slow.".to_owned()),
        commands,
    })
}

/// A health check stricter than the app under load drains healthy-but-busy targets.
pub fn loosen_the_health_check(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::HealthCheckTimeout)?;
    let group = context.culprits().next()?;
    Some(NextStep {
        proposal: format!(
            "Give {}'s health check room: a timeout above the app's p99 under load, and a health path that does not queue behind real requests",
            group.name
        ),
        rationale: finding.summary.clone(),
        trade_offs: Some("A looser check notices a dead target later (interval x unhealthy threshold); a health endpoint answered outside the busy worker pool keeps it strict without draining busy targets. The load itself (more pods or workers) is the lasting fix.".to_owned()),
        commands: vec![aws(format!(
            "aws elbv2 describe-target-groups --target-group-arns {} --query 'TargetGroups[].{{path:HealthCheckPath,interval:HealthCheckIntervalSeconds,timeout:HealthCheckTimeoutSeconds,unhealthy:UnhealthyThresholdCount}}' --output table{}",
            shell_quote(&group.arn),
            region_flag(context.alarm)
        ))],
    })
}

/// Probes failing under load take pods out of rotation or restart them.
pub fn read_the_probe_failures(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::ProbeFailures)?;
    let (namespace, deployment) = namespace_and_deployment(context)?;
    let ns = shell_quote(namespace);
    Some(NextStep {
        proposal: match ProbeTrouble::of_finding(finding) {
            ProbeTrouble::ErrorStatus => format!(
                "Check {deployment}'s probe paths and ports against what its current revision serves: the probes get HTTP errors"
            ),
            ProbeTrouble::NotListening => format!(
                "Check that {deployment} listens on its probes' port, and give it a startup probe long enough to start"
            ),
            _ => format!("Compare {deployment}'s probe timeouts with its latency under load"),
        },
        rationale: finding.summary.clone(),
        trade_offs: Some(match ProbeTrouble::of_finding(finding) {
            ProbeTrouble::ErrorStatus | ProbeTrouble::NotListening => "A probe that never passes keeps every new pod out of the endpoints: roll back or fix the probe; loosening its thresholds only delays the same outcome.".to_owned(),
            _ => "A probe timeout above the p99 under load stops busy pods being pulled; a liveness probe should only catch a hung process, never a slow one.".to_owned(),
        }),
        commands: vec![
            kubectl(format!(
                "kubectl -n {ns} get events --field-selector reason=Unhealthy --sort-by=.lastTimestamp"
            )),
            kubectl(format!(
                "kubectl -n {ns} get deployment {} -o jsonpath='{{range .spec.template.spec.containers[*]}}{{.name}}: readiness={{.readinessProbe}} liveness={{.livenessProbe}}{{\"\\n\"}}{{end}}'",
                shell_quote(deployment)
            )),
        ],
    })
}

/// The node autoscaler is at its limits or cannot launch.
pub fn see_why_nodes_are_not_added(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::NodesBlocked)?;
    // NodeClaims that fail to launch while no limit is reached: the cloud had
    // no capacity for what the NodePool allows, not a cap on spend.
    let launches_fail = finding
        .evidence
        .iter()
        .any(|e| e.name.starts_with("NodeClaim "));
    let at_a_limit = finding.summary.contains(" limit") || finding.summary.contains("maximum");
    if launches_fail && !at_a_limit {
        return Some(NextStep {
            proposal: "Give the autoscaler more ways to launch: widen the NodePool's instance types and families, zones and capacity types, so that a launch that finds no capacity can fall back".to_owned(),
            rationale: finding.summary.clone(),
            trade_offs: Some("More instance types and zones (and on-demand beside spot) cost flexibility in price and locality; a narrow list pinned for a reason (GPUs, licences) should stay narrow.".to_owned()),
            commands: vec![
                kubectl("kubectl get nodeclaims.karpenter.sh -o wide".to_owned()),
                kubectl("kubectl get nodepools.karpenter.sh -o jsonpath='{range .items[*]}{.metadata.name}: {.spec.template.spec.requirements}{\"\\n\"}{end}'".to_owned()),
            ],
        });
    }
    Some(NextStep {
        proposal: "Raise the capacity the autoscaler may provision (the NodePool's limits or the node group's maximum), or free it, so that the pending pods can be placed".to_owned(),
        rationale: finding.summary.clone(),
        trade_offs: Some("Limits cap spend on purpose: raising them is a cost decision. Lowering other workloads' requests, or the HPA's maximum, frees room without new nodes.".to_owned()),
        commands: vec![
            kubectl("kubectl get nodepools.karpenter.sh -o custom-columns=NAME:.metadata.name,CPU_LIMIT:.spec.limits.cpu,CPU_USED:.status.resources.cpu,MEM_LIMIT:.spec.limits.memory,MEM_USED:.status.resources.memory".to_owned()),
            kubectl("kubectl get nodeclaims.karpenter.sh -o wide".to_owned()),
            kubectl("kubectl -n kube-system get configmap cluster-autoscaler-status -o jsonpath='{.data.status}'".to_owned()),
        ],
    })
}

/// Someone changed the path through the AWS API just before the breach:
/// look at the record and the setting as it is now. Undoing it is for the
/// change's owner to decide; alarm-triage changes nothing.
pub fn review_the_aws_change(context: &Context<'_>) -> Option<NextStep> {
    use crate::changes::{ChangeKind, ChangeOrigin};
    let finding = context.cause(FindingId::ConfigurationChange)?;
    let change = context
        .changes
        .iter()
        .filter(|c| c.source == ChangeOrigin::CloudTrail && !c.automatic)
        .filter(|c| c.offset_seconds.is_some_and(|s| s <= 60))
        .max_by_key(|c| (c.most_plausible, c.at))?;
    let region = region_flag(context.alarm);
    // The setting as it is now first (short enough for the first screen),
    // then the record of the call.
    let mut commands = Vec::new();
    let named = |prefix: &str| change.subject.strip_prefix(prefix).map(str::to_owned);
    match change.kind {
        ChangeKind::TargetGroup | ChangeKind::Targets => {
            if let Some(group) = named("target group ") {
                commands.push(aws(format!(
                    "aws elbv2 describe-target-groups --names {}{region}",
                    shell_quote(&group)
                )));
            }
        }
        ChangeKind::SecurityGroup => {
            if let Some(group) = named("security group ") {
                commands.push(aws(format!(
                    "aws ec2 describe-security-group-rules --filters Name=group-id,Values={} --output table{region}",
                    shell_quote(&group)
                )));
            }
        }
        _ => {}
    }
    if let Some(event) = &change.event {
        commands.push(aws(format!(
            "aws cloudtrail lookup-events --lookup-attributes AttributeKey=EventName,AttributeValue={} --start-time {} --end-time {} --query 'Events[].CloudTrailEvent' --output text{region}",
            shell_quote(event),
            iso(change.at - chrono::Duration::minutes(1)),
            iso(change.at + chrono::Duration::minutes(1)),
        )));
    }
    Some(NextStep {
        proposal: format!(
            "Review the change to {} made {} ({}) with whoever made it",
            change.subject,
            change.when_against_the_breach(),
            change.summary
        ),
        rationale: finding.summary.clone(),
        trade_offs: Some(format!(
            "Restoring the previous setting is a decision for the change's owner{}; confirm first that the timing and the symptom match.",
            change
                .by
                .as_ref()
                .map(|b| format!(" ({b})"))
                .unwrap_or_default()
        )),
        commands,
    })
}

/// 4xx are callers' errors until shown otherwise: who calls, with which
/// client, and since when, before anything about pods or capacity.
pub fn find_the_callers(context: &Context<'_>) -> Option<NextStep> {
    if context.alarm.family() != crate::alarm::facts::MetricFamily::ClientErrors {
        return None;
    }
    let balancer = context
        .alarm
        .dimension("LoadBalancer")
        .and_then(crate::evidence::model::load_balancer_name)?;
    let group = context
        .culprits()
        .next()
        .map(|g| format!(" on {}", g.label()))
        .unwrap_or_default();
    Some(NextStep {
        proposal: format!(
            "Find which callers get the 4xx{group}: their user agents and client versions in the load balancer's access logs, and any client release at the time they began"
        ),
        rationale: "4xx are answers to requests the service refuses: a new client, a partner's release or a changed route sends what the service does not accept. The service's pods, its HPA and capacity are not in question while its latency and 5xx are unchanged.".to_owned(),
        trade_offs: Some("Rejecting bad requests is the service doing its job: the fix is usually in the caller; loosening validation to quiet the alarm hides a broken client.".to_owned()),
        commands: vec![aws(format!(
            "aws elbv2 describe-load-balancer-attributes --load-balancer-arn $(aws elbv2 describe-load-balancers --names {} --query 'LoadBalancers[0].LoadBalancerArn' --output text{region}) --query \"Attributes[?starts_with(Key, 'access_logs')]\"{region}",
            shell_quote(balancer),
            region = region_flag(context.alarm)
        ))],
    })
}

/// The bad pods share a node or a zone: look there, not at the service.
pub fn look_at_the_place(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::CommonFactor)?;
    let (namespace, _) = namespace_and_deployment(context).unzip();
    let ns = namespace
        .map(shell_quote)
        .unwrap_or_else(|| "default".to_owned());
    match &finding.facts {
        Facts::Node { name, .. } => {
            let node = shell_quote(name);
            Some(NextStep {
                proposal: format!(
                    "Look at node {name}: the pods that went bad are all there and the rest are fine; what troubles it (a neighbour without limits, memory pressure, an interruption) is what to relieve, not the service's own settings"
                ),
                rationale: finding.summary.clone(),
                trade_offs: Some("Limits or requests on the neighbour, or moving it (a taint, an affinity, a dedicated node pool), keep it from happening again; draining the node moves the pods but not the cause.".to_owned()),
                commands: vec![
                    kubectl(format!("kubectl describe node {node}")),
                    kubectl(format!(
                        "kubectl get pods -A -o wide --field-selector spec.nodeName={node}"
                    )),
                    kubectl("kubectl top pods -A --sort-by=cpu".to_owned()),
                ],
            })
        }
        _ => Some(NextStep {
            proposal: "Look at what the zone the bad pods share has that the others lack: its nodes, its network path, a zonal endpoint of a dependency".to_owned(),
            rationale: finding.summary.clone(),
            trade_offs: None,
            commands: vec![
                kubectl("kubectl get nodes -L topology.kubernetes.io/zone".to_owned()),
                kubectl(format!("kubectl -n {ns} get pods -o wide")),
            ],
        }),
    }
}

/// The longest literal stretch of a template (its masks cut out), to grep for.
fn literal_of(template: &str) -> String {
    let mut best = "";
    let mut rest = template;
    while !rest.is_empty() {
        let (piece, after) = match rest.find('<') {
            Some(open) => {
                let close = rest[open..].find('>').map_or(rest.len(), |c| open + c + 1);
                (&rest[..open], &rest[close..])
            }
            None => (rest, ""),
        };
        let piece = piece.trim_matches(|c: char| {
            c == '"' || c == '\'' || c.is_whitespace() || c == ':' || c == '('
        });
        if piece.chars().count() > best.chars().count() {
            best = piece;
        }
        rest = after;
    }
    best.to_owned()
}

/// The pods began to print an error with the breach: its text names what
/// failed (a column, a host and port, a heap); read it where it is printed.
pub fn read_the_new_error(context: &Context<'_>) -> Option<NextStep> {
    let finding = context.cause(FindingId::NewLogErrors)?;
    let Facts::Logs {
        namespace,
        template,
        pods,
        container,
        since,
        previous,
        ..
    } = &finding.facts
    else {
        return None;
    };
    let pod = pods.first()?;
    let literal = literal_of(template);
    let grep = if literal.chars().count() >= 6 {
        format!(" | grep -F -e {}", shell_quote(&literal))
    } else {
        String::new()
    };
    let container_flag = if container.is_empty() {
        String::new()
    } else {
        format!(" -c {}", shell_quote(container))
    };
    let commands = vec![kubectl(format!(
        "kubectl -n {} logs {}{container_flag}{} --since-time={} --timestamps{grep}",
        shell_quote(namespace),
        shell_quote(pod),
        if *previous { " --previous" } else { "" },
        iso(*since - chrono::Duration::minutes(5)),
    ))];
    Some(NextStep {
        proposal: format!(
            "Read the error the pods print since {}: {}; what it names (a column, a host and port, a limit) is where the fix is",
            since.format("%H:%M"),
            crate::logs::patterns::quoted(template)
        ),
        rationale: finding.summary.clone(),
        trade_offs: None,
        commands,
    })
}
