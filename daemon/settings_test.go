package daemon_test

import (
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
)

// filesSettings decodes a files block rooted at root.
func filesSettings(root string) connectors.Settings {
	return connectors.Settings{Decode: func(v any) error {
		*v.(*files.Config) = files.Config{Root: root}
		return nil
	}}
}
