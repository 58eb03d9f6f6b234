package ingestd

import (
	"context"
	"time"
)

// BlockReport is what a daemon remembers of its verdicts since it
// started: how many turns it answered and how many of them its verdict
// blocked, per interval, and the documents that caused the most blocks.
// It is kept in memory by the retrieval metrics (retrieval/metrics) and
// served to operators (GET /v1/blocks, the console).
type BlockReport struct {
	// Since is when counting started: the process's start.
	Since time.Time `json:"since"`
	// Turns and Blocked count every answer, and those whose verdict did
	// not allow every tool class (enforce over untrusted or unknown
	// grounding). WouldBlock counts the answers shadow mode let through
	// that enforce would have blocked.
	Turns      int `json:"turns"`
	Blocked    int `json:"blocked"`
	WouldBlock int `json:"would_block"`
	// BucketSeconds is the width of each bucket; Buckets are the last
	// day's, oldest first, the empty ones left out.
	BucketSeconds int           `json:"bucket_seconds"`
	Buckets       []BlockBucket `json:"buckets"`
	// Documents are the untrusted documents named by blocking (or
	// would-block) verdicts, most blocks first, at most MaxBlockedDocuments.
	Documents []BlockedDocument `json:"documents"`
	// Untracked counts the blocks by documents that found the table full
	// (it holds at most MaxTrackedBlockedDocuments).
	Untracked int `json:"untracked"`
}

// BlockBucket is one interval of a BlockReport.
type BlockBucket struct {
	Start      time.Time `json:"start"`
	Turns      int       `json:"turns"`
	Blocked    int       `json:"blocked"`
	WouldBlock int       `json:"would_block"`
}

// BlockedDocument is one document that caused blocks: how many verdicts
// named it untrusted while blocking (or, in shadow mode, while they
// would have), and the last time one did.
type BlockedDocument struct {
	DocumentID   string    `json:"document_id"`
	Installation string    `json:"installation"`
	Blocks       int       `json:"blocks"`
	LastAt       time.Time `json:"last_at"`
}

// Limits of a BlockReport.
const (
	MaxBlockedDocuments        = 50
	MaxTrackedBlockedDocuments = 10000
)

// BlockLog serves the BlockReport.
type BlockLog interface {
	BlockReport(ctx context.Context) (BlockReport, error)
}
