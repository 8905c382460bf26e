package runtime

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/google/uuid"
)

// idLen is the length of a job ID made here: a UUID in its text form.
const idLen = 36

// newID returns a new job ID: a version 7 UUID, whose leading timestamp
// makes IDs made later sort later.
func newID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("queuey: job id: %w", err)
	}
	return u.String(), nil
}

// newIDs returns n new job IDs, as newID does, from one read of random
// bytes and in one string, which the IDs share (so that one ID kept keeps
// the batch's 36·n bytes): a batch's IDs cost four allocations instead of
// two each. The random bytes come from crypto/rand, whatever uuid.SetRand
// says.
func newIDs(n int) ([]string, error) {
	random := make([]byte, 16*n)
	if _, err := rand.Read(random); err != nil {
		return nil, fmt.Errorf("queuey: job ids: %w", err)
	}
	r := bytes.NewReader(random)
	text := make([]byte, idLen*n)
	for i := range n {
		u, err := uuid.NewV7FromReader(r)
		if err != nil {
			return nil, fmt.Errorf("queuey: job ids: %w", err)
		}
		formatUUID(text[i*idLen:(i+1)*idLen], u)
	}
	all := string(text)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = all[i*idLen : (i+1)*idLen]
	}
	return ids, nil
}

// formatUUID writes u to dst (idLen bytes) in the form u.String() gives.
func formatUUID(dst []byte, u uuid.UUID) {
	hex.Encode(dst, u[:4])
	dst[8] = '-'
	hex.Encode(dst[9:13], u[4:6])
	dst[13] = '-'
	hex.Encode(dst[14:18], u[6:8])
	dst[18] = '-'
	hex.Encode(dst[19:23], u[8:10])
	dst[23] = '-'
	hex.Encode(dst[24:], u[10:])
}
