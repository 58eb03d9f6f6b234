package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
)

// A reader index is a vector index of one principal's chunks: a partial
// HNSW index (the store's graph) over the chunks whose readers name the
// principal. A person's vector search walks the graph of each of their
// principals that has one, instead of the whole corpus's graph with their
// filter: through the whole graph, pgvector's iterative scan visits about
// 1/s neighbours for each readable one when the person reads a share s of
// the chunks (measured at 100k chunks, a tenth readable: 1.8 times the
// unfiltered search), through their own it visits only readable ones (0.6
// times it, recall@10 against exact search 0.998 instead of 0.89). It is
// an access path, not a permission: every search still tests the readers
// in its query, so a missing, dropped or half-built reader index changes
// only how fast a search is.
//
// Each index costs what a vector index of the principal's chunks costs:
// build time, disk, and a graph insert on each of their chunks' writes.
// Worth it for principals who read a large share of the store (a broad
// group, Everyone); a principal who reads little is served well by the
// readers index (the planner scores their few chunks exactly).

// readerIndexPrefix begins the name of every reader index; the principal
// is the index's comment (its name holds a hash of it).
const readerIndexPrefix = "chunks_embedding_reader_"

// readerIndexName is the name of p's reader index.
func readerIndexName(p ingestd.Principal) string {
	h := sha256.Sum256([]byte(p))
	return readerIndexPrefix + hex.EncodeToString(h[:8])
}

// readerIndexSQL creates p's reader index name with graph h, concurrently.
// The predicate is the one a search's c.readers && $n with p alone
// implies, once the planner sees the value.
func readerIndexSQL(name string, p ingestd.Principal, h HNSW) string {
	return fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON chunks USING hnsw (embedding vector_cosine_ops) %s WHERE readers && ARRAY[%s]::text[]",
		name, h.with(), quoteLiteral(string(p)))
}

// IndexReader builds p's reader index with the store's graph (Options.HNSWM,
// HNSWEfConstruction), with CREATE INDEX CONCURRENTLY so that writes and
// searches go on meanwhile; a principal that has one keeps it. A build cut
// short leaves an invalid index, which searches do not use and the next
// IndexReader replaces. The store's searches use it at once; another
// process's within a minute (readerIndexesFor). Returns EINVALID for a
// principal that is not one (ingestd.ParsePrincipal, whose form of p
// the index is built for). RebuildVectorIndex rebuilds only the whole
// corpus's index: a reader index keeps the graph it was built with until
// DropReaderIndex and IndexReader.
func (s *Store) IndexReader(ctx context.Context, p ingestd.Principal, o RebuildOptions) error {
	p, err := ingestd.ParsePrincipal(string(p))
	if err != nil {
		return err
	}
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return unavailable("connect to "+s.url, err)
	}
	// The connection leaves the pool: its session settings must not reach
	// other callers.
	c := pc.Hijack()
	defer c.Close(context.WithoutCancel(ctx))
	name := readerIndexName(p)
	var valid *bool
	if err := c.QueryRow(ctx, "SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1))", name).Scan(&valid); err != nil {
		return classify("read the reader index of "+string(p), err)
	}
	// The comment names the principal for the searches; a valid index
	// whose build stopped before it gets it again.
	comment := fmt.Sprintf("COMMENT ON INDEX %s IS %s", name, quoteLiteral(string(p)))
	qs := []string{comment}
	if valid == nil || !*valid {
		qs = []string{"SET statement_timeout = 0"}
		if o.MaintenanceWorkMem != "" {
			qs = append(qs, "SET maintenance_work_mem = "+quoteLiteral(o.MaintenanceWorkMem))
		}
		qs = append(qs, "DROP INDEX CONCURRENTLY IF EXISTS "+name, readerIndexSQL(name, p, s.hnsw), comment)
	}
	for _, q := range qs {
		if _, err := c.Exec(ctx, q); err != nil {
			return classify("build the reader index of "+string(p), err)
		}
	}
	s.readerIndexes.forget()
	return nil
}

// DropReaderIndex drops p's reader index, concurrently; a principal
// without one is left as it is. Returns EINVALID for a principal that is
// not one (ingestd.ParsePrincipal).
func (s *Store) DropReaderIndex(ctx context.Context, p ingestd.Principal) error {
	p, err := ingestd.ParsePrincipal(string(p))
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+readerIndexName(p)); err != nil {
		return classify("drop the reader index of "+string(p), err)
	}
	s.readerIndexes.forget()
	return nil
}

// ReaderIndexes returns the principals that have a reader index, in
// order.
func (s *Store) ReaderIndexes(ctx context.Context) ([]ingestd.Principal, error) {
	set, err := readReaderIndexes(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []ingestd.Principal
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

const readerIndexesSQL = `SELECT obj_description(i.indexrelid, 'pg_class')
	FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	WHERE i.indrelid = 'chunks'::regclass AND i.indisvalid AND c.relname LIKE 'chunks\_embedding\_reader\_%'
		AND obj_description(i.indexrelid, 'pg_class') IS NOT NULL
	ORDER BY 1`

func readReaderIndexes(ctx context.Context, s *Store) (map[ingestd.Principal]bool, error) {
	rows, err := s.pool.Query(ctx, readerIndexesSQL)
	if err != nil {
		return nil, classify("list reader indexes", err)
	}
	defer rows.Close()
	set := map[ingestd.Principal]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, classify("list reader indexes", err)
		}
		set[ingestd.Principal(p)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, classify("list reader indexes", err)
	}
	return set, nil
}

// readerIndexesFor is how long the list of reader indexes is kept before
// it is read again.
const readerIndexesFor = time.Minute

// ownGraphs splits r's principals into those with a reader index and the
// others, for SearchVector.
func (s *Store) ownGraphs(ctx context.Context, r *ingestd.Reader) (own, rest []string) {
	set := s.readerIndexes.load(readerIndexesFor, func() (map[ingestd.Principal]bool, error) { return readReaderIndexes(ctx, s) })
	for _, p := range r.Principals {
		if set[p] {
			own = append(own, string(p))
		} else {
			rest = append(rest, string(p))
		}
	}
	return own, rest
}

// vectorSplitSQL is SearchVector's statement for a person with reader
// indexes: one branch per principal in own (c.readers && that principal
// alone, which the planner serves from its reader index) and one for the
// rest, each the best $2 by the index's distance, then the best $2 of
// their union (a chunk two principals read is found twice, as the same
// row). where is the filter without the readers; the branches' readers
// are parameters from $next.
func vectorSplitSQL(embedder, where string, next, branches int) string {
	var b strings.Builder
	b.WriteString("SELECT id, document_id, score FROM (")
	for i := range branches {
		if i > 0 {
			b.WriteString("\n\t\tUNION ")
		}
		fmt.Fprintf(&b, `(SELECT c.id, c.document_id, 1 - (c.embedding <=> $1) AS score
		FROM chunks c
		WHERE %s AND %s AND c.readers && $%d::text[]
		ORDER BY c.embedding <=> $1
		LIMIT $2)`, embedder, where, next+i)
	}
	b.WriteString(`) AS h
		ORDER BY score DESC, id
		LIMIT $2`)
	return b.String()
}
