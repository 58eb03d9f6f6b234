package sqlite_test

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ingestd.Store { return sqlitetest.MustOpen(t) })
}
