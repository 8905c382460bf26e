package adminapi

import (
	"slices"
	"strings"
)

// Headers a re-drive sets on each job it puts back, among the envelope's
// own headers.
const (
	// HeaderRedrives counts how often the job was re-driven, in decimal.
	HeaderRedrives = "queuey-redrives"
	// HeaderRedrivenAt is when it was last re-driven, RFC 3339 in UTC.
	HeaderRedrivenAt = "queuey-redriven-at"
)

// PoisonRefusal is the reason a re-drive gives for keeping a poison
// letter, in its RefusedLetter.
const PoisonRefusal = "poison: the message is not a valid envelope, so there is no job to put back"

// DeadLetterSelector says which dead letters a re-drive or purge takes.
// The letters it takes are those with one of IDs, or, without IDs, every
// letter when All is set, or those whose reason contains Reason and whose
// kind is Kind (each when not empty).
type DeadLetterSelector struct {
	All    bool
	IDs    []string
	Reason string
	Kind   string
}

// Empty reports whether s selects nothing.
func (s DeadLetterSelector) Empty() bool {
	return !s.All && len(s.IDs) == 0 && s.Reason == "" && s.Kind == ""
}

// Selects reports whether s takes the dead letter info describes.
func (s DeadLetterSelector) Selects(info DeadLetterInfo) bool {
	if len(s.IDs) > 0 {
		return slices.Contains(s.IDs, info.ID)
	}
	if s.All {
		return true
	}
	if s.Empty() {
		return false
	}
	return (s.Reason == "" || strings.Contains(info.Reason, s.Reason)) && (s.Kind == "" || info.Kind == s.Kind)
}

// NotFound returns the IDs s asks for that are not in seen.
func (s DeadLetterSelector) NotFound(seen map[string]bool) []string {
	var out []string
	for _, id := range s.IDs {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// RedriveProgress is reported after each letter a re-drive moved or refused.
type RedriveProgress struct {
	// Moved and Refused count the letters so far.
	Moved, Refused int
	// Total is how many dead letters the queue held when the re-drive
	// began: an upper bound of what it will look at.
	Total int
}

// RedriveResult is what a re-drive did.
type RedriveResult struct {
	// Moved are the IDs of the letters put back on the queue, in order.
	Moved []string `json:"moved"`
	// Refused are the letters selected but kept, each with why.
	Refused []RefusedLetter `json:"refused,omitempty"`
	// NotFound are the IDs asked for that no dead letter has.
	NotFound []string `json:"not_found,omitempty"`
}

// RefusedLetter is a dead letter a re-drive kept, and why.
type RefusedLetter struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// PurgeResult is what a purge did.
type PurgeResult struct {
	// Purged counts the letters deleted.
	Purged int `json:"purged"`
	// NotFound are the IDs asked for that no dead letter has.
	NotFound []string `json:"not_found,omitempty"`
}
