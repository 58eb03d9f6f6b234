# poppler's pdftotext, which connectors/internal/extract's
# TestAgainstPdftotext compares the PDF text of every fixture with.
ci_apt_install poppler-utils
pdftotext -v 2>&1 | sed -n 1p  # sed reads it all: head could close the pipe early and, under pipefail, fail CI
export INGESTD_TEST_PDFTOTEXT="$(command -v pdftotext)"
required_vars+=(INGESTD_TEST_PDFTOTEXT)
