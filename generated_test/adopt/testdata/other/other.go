// Package other holds a job type whose annotation names the queue of
// jobs.Mail by mistake.
package other

//go:generate go tool queuey-gen

// Invoice claims the queue name of jobs.Mail.
//
//queuey:queue name=adopt.mail
type Invoice struct {
	Cents int
}
