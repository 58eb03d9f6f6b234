package ingestd

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// DocumentID is the stable id of the document with the given external id in
// the given installation. It is the same on every node, so workers that
// never talk to each other agree on it.
func DocumentID(installation, externalID string) string {
	return "d" + shortHash(installation, externalID)
}

// ChunkID is the stable id of a chunk: its document, its text and which
// occurrence of that text in the document it is (0 for the first), so an
// unchanged paragraph keeps its id when text around it changes.
func ChunkID(documentID, text string, occurrence int) string {
	return "c" + shortHash(documentID, text, strconv.Itoa(occurrence))
}

// ContentHash is the hex SHA-256 of the parts, each length-prefixed so that
// no two different part lists hash alike.
func ContentHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func shortHash(parts ...string) string {
	return ContentHash(parts...)[:24]
}
