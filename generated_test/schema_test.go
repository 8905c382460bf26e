package generatedtest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/queuey/queuey/cmd/queuey-gen/generator"
)

const schemaJobs = `package shop

import "time"

type Line struct {
	SKU   string
	Qty   uint16
	Notes []Line
}

//queuey:queue max_attempts=2 delay=plugin
type Refund struct{ ID string }

//queuey:queue prefetch=3 max_priority=0 max_attempts=7 queue_type=quorum
type ShipOrder struct {
	ID      string ` + "`msgpack:\"id\"`" + `
	At      time.Time
	Wait    time.Duration
	Blob    []byte
	Lines   []Line
	Tags    map[string]int8
	Note    *string
	Next    *ShipOrder
	Skipped int ` + "`msgpack:\"-\"`" + `
}
`

// TestSchema checks queuey-gen -schema: each job's queue as its
// annotation resolves it, and a JSON Schema of its payload keyed as
// msgpack keys it; nothing is written.
func TestSchema(t *testing.T) {
	dir := cliModule(t, schemaJobs)
	var stdout, stderr bytes.Buffer
	if code := generator.Run([]string{"-schema"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q after -schema, want jobs.go only", names)
	}
	var got struct {
		Jobs []struct {
			Queue        string  `json:"queue"`
			Kind         string  `json:"kind"`
			QueueType    string  `json:"queue_type"`
			MaxAttempts  int     `json:"max_attempts"`
			MaxPriority  int     `json:"max_priority"`
			Delay        *string `json:"delay"`
			DelayDefault bool    `json:"delay_default"`
			Payload      struct {
				Schema     string                     `json:"$schema"`
				Properties map[string]json.RawMessage `json:"properties"`
				Defs       map[string]json.RawMessage `json:"$defs"`
			} `json:"payload"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if len(got.Jobs) != 2 {
		t.Fatalf("%d jobs, want 2:\n%s", len(got.Jobs), stdout.String())
	}
	// The delay mode: the annotation's, or the default one, said so.
	if r := got.Jobs[0]; r.Queue != "shop.refund" || r.Delay == nil || *r.Delay != "plugin" || r.DelayDefault {
		t.Errorf("job %s: delay %v (default %v), want plugin from its annotation", r.Queue, r.Delay, r.DelayDefault)
	}
	j := got.Jobs[1]
	if j.Delay == nil || *j.Delay != "ladder" || !j.DelayDefault {
		t.Errorf("job %s: delay %v (default %v), want ladder, the default of a quorum queue", j.Queue, j.Delay, j.DelayDefault)
	}
	if j.Queue != "shop.ship_order" || j.Kind != "shop.ShipOrder" || j.MaxAttempts != 7 || j.MaxPriority != 0 || j.QueueType != "quorum" || j.Payload.Schema == "" {
		t.Errorf("job %+v, want max_attempts 7, max_priority 0, quorum, a $schema", j)
	}
	want := map[string]string{
		"id":    `{"type":"string"}`,
		"At":    `{"description":"msgpack timestamp extension (type -1)","format":"date-time","type":"string"}`,
		"Wait":  `{"description":"nanoseconds","maximum":9223372036854775807,"minimum":-9223372036854775808,"type":"integer"}`,
		"Blob":  `{"contentEncoding":"base64","description":"msgpack bin","type":["string","null"]}`,
		"Lines": `{"items":{"$ref":"#/$defs/shop.Line"},"type":["array","null"]}`,
		"Tags":  `{"additionalProperties":{"maximum":127,"minimum":-128,"type":"integer"},"propertyNames":{"type":"string"},"type":["object","null"]}`,
		"Note":  `{"anyOf":[{"type":"string"},{"type":"null"}]}`,
		"Next":  `{"anyOf":[{"$ref":"#"},{"type":"null"}]}`,
	}
	if len(j.Payload.Properties) != len(want) {
		t.Errorf("properties %v, want %d", keys(j.Payload.Properties), len(want))
	}
	for k, w := range want {
		var compact bytes.Buffer
		if err := json.Compact(&compact, j.Payload.Properties[k]); err != nil || compact.String() != w {
			t.Errorf("property %s: %s, want %s", k, compact.String(), w)
		}
	}
	if _, ok := j.Payload.Defs["shop.Line"]; !ok {
		t.Errorf("$defs %v, want shop.Line", keys(j.Payload.Defs))
	}

	if code := generator.Run([]string{"-schema", "-check"}, &stdout, &stderr); code != 2 {
		t.Errorf("-schema -check: exit %d, want 2", code)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
