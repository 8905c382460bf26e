// Package emails holds the jobs of the emails example: plain structs, each
// made a job by its //queuey:queue line. queuey_gen.go, generated from
// them, holds the typed functions that enqueue and handle them.
package emails

//go:generate go tool queuey-gen

// SendEmail sends one email.
//
//queuey:queue prefetch=10 max_attempts=3 retry_base=1s retry_max=10s timeout=30s
type SendEmail struct {
	To      string
	Subject string
	Body    string
}

// ChargeCard charges a customer's card through a payment gateway that rate
// limits its callers.
//
//queuey:queue name=billing.charge_card prefetch=4 concurrency=2 max_priority=5 max_attempts=5 retry_base=1s
type ChargeCard struct {
	CustomerID string
	Cents      int64
	Currency   string
}
