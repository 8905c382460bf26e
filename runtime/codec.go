package runtime

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/msgpack/mpfit"
)

// payloadCodec is a msgpack encoder and decoder with the buffer and reader
// they work on, kept in a pool so that encoding a job allocates only the
// payload it returns and decoding one allocates only what the job holds.
type payloadCodec struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
	r   bytes.Reader
	dec *msgpack.Decoder
}

// maxPooledBuffer is the largest encode buffer kept for reuse, so that one
// huge job does not pin its buffer for the life of the process.
const maxPooledBuffer = 64 << 10

var codecs = sync.Pool{New: func() any {
	c := &payloadCodec{enc: msgpack.NewEncoder(nil), dec: msgpack.NewDecoder(nil)}
	return c
}}

// encodePayload returns the msgpack encoding of v, as msgpack.Marshal does.
func encodePayload(v any) ([]byte, error) {
	c := codecs.Get().(*payloadCodec)
	defer c.put()
	c.buf.Reset()
	c.enc.Reset(&c.buf)
	if err := c.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(c.buf.Bytes()), nil
}

// decodePayload decodes data into v, as msgpack.Unmarshal does, once fit,
// the mpfit.Checker of the type v points to, has passed it. fit checks
// data as mpscan.Check does: a payload off the wire may claim lengths it
// does not hold, which the decoder would allocate for, or nest deeper than
// the decoder's recursion can go without overflowing the stack. And it
// refuses a number that does not fit its field (300 for an int8), which
// msgpack would decode wrapped around, without an error.
func decodePayload(data []byte, v any, fit *mpfit.Checker) error {
	if err := fit.Check(data); err != nil {
		return err
	}
	c := codecs.Get().(*payloadCodec)
	c.r.Reset(data)
	c.dec.Reset(&c.r)
	if err := c.decode(v); err != nil {
		// A failed decode may leave a buffer grown for what the payload
		// claimed in the decoder: it is not kept for the next one.
		return err
	}
	c.put()
	return nil
}

// decode decodes the next value of c's reader into v, with a panic of
// msgpack's turned into an error: msgpack/v5 panics decoding a nil into a
// value of a struct type with its own decoding method, such as a
// time.Time field, and a payload must never crash or be retried for it.
func (c *payloadCodec) decode(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("msgpack panicked: %v", r)
		}
	}()
	return c.dec.Decode(v)
}

func (c *payloadCodec) put() {
	c.enc.Reset(nil)
	c.dec.Reset(nil)
	c.r.Reset(nil)
	if c.buf.Cap() > maxPooledBuffer {
		c.buf = bytes.Buffer{}
	}
	codecs.Put(c)
}
