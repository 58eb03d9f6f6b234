# Dovecot IMAP server for the IMAP connector's integration tests
# (connectors/imap/dovecot_test.go). The tests start their own dovecot with
# a config in a temp dir, so the system service apt may start is stopped
# and disabled: it would hold ports 143/993 and is not used.
ci_apt_install dovecot-imapd
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now dovecot >/dev/null 2>&1 || true
fi
if command -v service >/dev/null 2>&1; then
  service dovecot stop >/dev/null 2>&1 || true
fi
dovecot --version
export INGESTD_TEST_DOVECOT="$(command -v dovecot)"
required_vars+=(INGESTD_TEST_DOVECOT)
