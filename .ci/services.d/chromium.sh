# Debian's chromium, headless, for the console's browser tests
# (console TestPagesLoadWithoutErrors, TestInjectionMailIsBlocked,
# TestDocumentStringsAreText, TestReplayNeedsAnAdminToken,
# TestOtherOriginCannotDriveIt), driven from Go with chromedp.
ci_apt_install chromium
chromium --headless --no-sandbox --disable-gpu --version 2>/dev/null | sed -n 1p  # sed reads it all, as in poppler.sh
INGESTD_TEST_CHROMIUM="$(command -v chromium)"
export INGESTD_TEST_CHROMIUM
required_vars+=(INGESTD_TEST_CHROMIUM)
