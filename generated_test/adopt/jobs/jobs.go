// Package jobs holds the job type that owns the queue adopt.mail.
package jobs

//go:generate go tool queuey-gen

// Mail is a job of the queue adopt.mail.
//
//queuey:queue name=adopt.mail
type Mail struct {
	To string
}
