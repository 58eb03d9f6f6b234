# PostgreSQL 17 + pgvector for the Postgres store's tests (store/postgres).
# Sourced by .ci/run; the server comes from ../shared/tools/pgvector-up (a
# sibling of the repository), which prints its URL on its last line. The
# restart test stops and starts it through the same script.
pgvector_up="$(cd "$(git rev-parse --show-toplevel)/../shared/tools" && pwd)/pgvector-up"
INGESTD_TEST_POSTGRES_URL="$("$pgvector_up" start | tail -n 1)"
export INGESTD_TEST_POSTGRES_URL
export INGESTD_TEST_PGVECTOR_UP="$pgvector_up"
echo "postgres: $INGESTD_TEST_POSTGRES_URL"
required_vars+=(INGESTD_TEST_POSTGRES_URL INGESTD_TEST_PGVECTOR_UP)
