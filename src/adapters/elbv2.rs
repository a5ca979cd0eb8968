//! Elastic Load Balancing v2: the load balancer, its target groups, their
//! attributes, tags and target health.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::try_join_all;

use super::warm_cache::{SHARED_LOOKUP_TTL, WarmCache};
use super::{sdk_failure, service_error_code};
use crate::error::Result;
use crate::evidence::model::load_balancer_name;
use crate::evidence::model::{
    HealthCheck, LoadBalancer, Tags, TargetGroup, TargetGroupAttributes, TargetHealth, TargetType,
};
use crate::evidence::{LoadBalancerSource, source};

/// DescribeTags takes at most 20 resources a call.
const MAX_TAG_ARNS: usize = 20;

/// Reads ELBv2 through aws-sdk-elasticloadbalancingv2. Target groups, their
/// tags and attributes are shared by every alarm on a load balancer and kept
/// for a minute (see [`WarmCache`]); health is read afresh every time.
#[derive(Debug, Clone)]
pub struct Elbv2Source {
    client: aws_sdk_elasticloadbalancingv2::Client,
    groups: Arc<WarmCache<Vec<TargetGroup>>>,
    tags: Arc<WarmCache<BTreeMap<String, Tags>>>,
    attributes: Arc<WarmCache<TargetGroupAttributes>>,
}

impl Elbv2Source {
    pub fn new(client: aws_sdk_elasticloadbalancingv2::Client) -> Self {
        Elbv2Source {
            client,
            groups: Arc::new(WarmCache::new(SHARED_LOOKUP_TTL)),
            tags: Arc::new(WarmCache::new(SHARED_LOOKUP_TTL)),
            attributes: Arc::new(WarmCache::new(SHARED_LOOKUP_TTL)),
        }
    }
}

/// `arn:...:targetgroup/<name>/<id>` -> `targetgroup/<name>/<id>`.
fn arn_suffix(arn: &str) -> String {
    arn.split_once(':')
        .map_or(arn, |_| arn.rsplit(':').next().unwrap_or(arn))
        .to_owned()
}

impl LoadBalancerSource for Elbv2Source {
    async fn load_balancer(&self, dimension: &str) -> Result<Option<LoadBalancer>> {
        let Some(name) = load_balancer_name(dimension) else {
            return Ok(None);
        };
        let out = match self
            .client
            .describe_load_balancers()
            .names(name)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if service_error_code(&e) == Some("LoadBalancerNotFound") => return Ok(None),
            Err(e) => {
                return Err(sdk_failure(
                    source::LOAD_BALANCER,
                    "elasticloadbalancing:DescribeLoadBalancers",
                    &e,
                ));
            }
        };
        Ok(out.load_balancers().iter().find_map(|lb| {
            let arn = lb.load_balancer_arn()?;
            let suffix = arn.split_once(":loadbalancer/")?.1;
            (suffix == dimension).then(|| LoadBalancer {
                arn: arn.to_owned(),
                name: lb.load_balancer_name().unwrap_or(name).to_owned(),
                dimension: suffix.to_owned(),
                scheme: lb.scheme().map(|s| s.as_str().to_owned()),
                security_groups: lb.security_groups().to_vec(),
            })
        }))
    }

    async fn target_groups(&self, load_balancer_arn: &str) -> Result<Option<Vec<TargetGroup>>> {
        if let Some(groups) = self.groups.get(load_balancer_arn, Instant::now()) {
            return Ok(Some(groups));
        }
        let mut pages = self
            .client
            .describe_target_groups()
            .load_balancer_arn(load_balancer_arn)
            .into_paginator()
            .send();
        let mut out = Vec::new();
        while let Some(page) = pages.next().await {
            let page = match page {
                Ok(page) => page,
                Err(e) if service_error_code(&e) == Some("LoadBalancerNotFound") => {
                    return Ok(None);
                }
                Err(e) => {
                    return Err(sdk_failure(
                        source::TARGET_GROUPS,
                        "elasticloadbalancing:DescribeTargetGroups",
                        &e,
                    ));
                }
            };
            for tg in page.target_groups() {
                let Some(arn) = tg.target_group_arn() else {
                    continue;
                };
                out.push(TargetGroup {
                    arn: arn.to_owned(),
                    name: tg.target_group_name().unwrap_or_default().to_owned(),
                    dimension: arn_suffix(arn),
                    target_type: TargetType::parse(
                        tg.target_type().map_or("instance", |t| t.as_str()),
                    ),
                    port: tg.port(),
                    protocol: tg.protocol().map(|p| p.as_str().to_owned()),
                    health_check: Some(HealthCheck {
                        path: tg.health_check_path().map(str::to_owned),
                        interval_seconds: tg.health_check_interval_seconds(),
                        timeout_seconds: tg.health_check_timeout_seconds(),
                        healthy_threshold: tg.healthy_threshold_count(),
                        unhealthy_threshold: tg.unhealthy_threshold_count(),
                        matcher: tg.matcher().and_then(|m| m.http_code()).map(str::to_owned),
                    }),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        self.groups
            .put(load_balancer_arn.to_owned(), out.clone(), Instant::now());
        Ok(Some(out))
    }

    async fn attributes(&self, target_group_arn: &str) -> Result<TargetGroupAttributes> {
        if let Some(attributes) = self.attributes.get(target_group_arn, Instant::now()) {
            return Ok(attributes);
        }
        let out = self
            .client
            .describe_target_group_attributes()
            .target_group_arn(target_group_arn)
            .send()
            .await
            .map_err(|e| {
                sdk_failure(
                    source::TARGET_GROUP_ATTRIBUTES,
                    "elasticloadbalancing:DescribeTargetGroupAttributes",
                    &e,
                )
            })?;
        let attributes = TargetGroupAttributes::from_pairs(
            out.attributes()
                .iter()
                .filter_map(|a| Some((a.key()?, a.value()?))),
        );
        self.attributes.put(
            target_group_arn.to_owned(),
            attributes.clone(),
            Instant::now(),
        );
        Ok(attributes)
    }

    async fn target_health(&self, target_group_arn: &str) -> Result<Vec<TargetHealth>> {
        let out = self
            .client
            .describe_target_health()
            .target_group_arn(target_group_arn)
            .send()
            .await
            .map_err(|e| {
                sdk_failure(
                    source::TARGET_HEALTH,
                    "elasticloadbalancing:DescribeTargetHealth",
                    &e,
                )
            })?;
        Ok(out
            .target_health_descriptions()
            .iter()
            .filter_map(|d| {
                let target = d.target()?;
                let health = d.target_health();
                Some(TargetHealth {
                    id: target.id()?.to_owned(),
                    port: target.port(),
                    state: health
                        .and_then(|h| h.state())
                        .map_or_else(|| "unknown".to_owned(), |s| s.as_str().to_owned()),
                    reason: health
                        .and_then(|h| h.reason())
                        .map(|r| r.as_str().to_owned()),
                    description: health.and_then(|h| h.description()).map(str::to_owned),
                })
            })
            .collect())
    }

    async fn tags(&self, arns: &[String]) -> Result<BTreeMap<String, Tags>> {
        let key = arns.join(" ");
        if let Some(tags) = self.tags.get(&key, Instant::now()) {
            return Ok(tags);
        }
        let calls = arns.chunks(MAX_TAG_ARNS).map(|chunk| {
            self.client
                .describe_tags()
                .set_resource_arns(Some(chunk.to_vec()))
                .send()
        });
        let answers = try_join_all(calls)
            .await
            .map_err(|e| sdk_failure(source::TAGS, "elasticloadbalancing:DescribeTags", &e))?;
        let tags: BTreeMap<String, Tags> = answers
            .iter()
            .flat_map(|a| a.tag_descriptions())
            .filter_map(|d| {
                let tags = d
                    .tags()
                    .iter()
                    .filter_map(|t| {
                        Some((
                            t.key()?.to_owned(),
                            t.value().unwrap_or_default().to_owned(),
                        ))
                    })
                    .collect();
                Some((d.resource_arn()?.to_owned(), tags))
            })
            .collect();
        self.tags.put(key, tags.clone(), Instant::now());
        Ok(tags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dimension_of_a_target_group_is_its_arn_suffix() {
        assert_eq!(
            arn_suffix(
                "arn:aws:elasticloadbalancing:eu-west-1:111122223333:targetgroup/k8s-shop-checkout-8a1f2c3d4e/65efe6e3f9b0f8c7"
            ),
            "targetgroup/k8s-shop-checkout-8a1f2c3d4e/65efe6e3f9b0f8c7"
        );
    }
}
