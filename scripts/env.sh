# Sourced by every script: the AWS SDK must never look for the EC2 metadata
# service here, and must never find real credentials by accident.
export AWS_EC2_METADATA_DISABLED=true
export AWS_REGION="${AWS_REGION:-eu-west-1}"
export AWS_DEFAULT_REGION="$AWS_REGION"
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-testing}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-testing}"
export AWS_SESSION_TOKEN="${AWS_SESSION_TOKEN:-testing}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export SAM_CLI_TELEMETRY=0
