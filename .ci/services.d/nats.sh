# NATS server for the multi-process JetStream tests (nats/multiproc_test.go).
# Sourced by .ci/services; exports the variable that switches the tests on.
if ! command -v nats-server >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
fi
nats-server --version
export INGESTD_TEST_NATS_SERVER="$(command -v nats-server)"
