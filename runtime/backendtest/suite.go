// Package backendtest is the conformance suite every runtime.Backend runs.
// A backend's tests call Run with a constructor; the suite gives each case
// its own queue, so cases run in parallel against one broker.
package backendtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// Run runs the conformance suite on backends made by newBackend. newBackend
// is called once per case and should register the backend's cleanup with
// t.Cleanup. The suite provokes failures on purpose, which the backend's
// workers log through its Logger: a backend that logs nowhere keeps the
// test output readable.
func Run(t *testing.T, f Features, newBackend func(t *testing.T) runtime.Backend) {
	cases := []struct {
		name  string
		waits bool
		fn    func(t *testing.T, f Features, nb func(t *testing.T) runtime.Backend)
	}{
		{"PriorityOrderAndFIFO", false, testPriorityOrder},
		{"InfoAndOptions", false, testInfo},
		{"EnqueueMany", false, testEnqueueMany},
		{"JobIDRule", false, testJobIDRule},
		{"RetryCountAndBackoff", true, testRetryBackoff},
		{"RetryThenSuccess", true, testRetryThenSuccess},
		{"PanicRetries", true, testPanicRetries},
		{"HostileHandlerErrors", true, testHostileErrors},
		{"DeferBurnsNoAttempt", true, testDeferNoAttempt},
		{"DeferReturnsAheadOfBacklog", true, testDeferAhead},
		{"NoPriorityDefersFIFO", true, testNoPriorityDefersFIFO},
		{"DeferZeroWaitsOneGranularity", true, testDeferZero},
		{"ShortWaitNotBehindLong", true, testShortWaitFirst},
		{"DelayedEnqueue", true, testDelayedEnqueue},
		{"WaitRefusals", true, testWaitRefusals},
		{"UndeclaredProducer", false, testUndeclaredProducer},
		{"DeadLetterReasons", false, testDeadLetterReasons},
		{"PoisonIsolation", false, testPoison},
		{"WrongKindDeadLettered", false, testWrongKind},
		{"DeadLetteredAt", false, testDeadLetteredAt},
		{"KindConflict", false, testKindConflict},
		{"EnqueueKindConflict", false, testEnqueueKindConflict},
		{"ConcurrencyLimit", false, testConcurrency},
		{"HandlerTimeout", false, testTimeout},
		{"RedeliveryAfterShutdown", false, testRedelivery},
		{"GracefulDrain", false, testGracefulDrain},
		{"AbandonedHandlerNotAcked", false, testAbandonedNotAcked},
		{"UnsettledDeliveriesDeadLetter", false, testUnsettledDeadLetters},
		{"PrefetchLimit", false, testPrefetch},
		{"NothingLostNothingDuplicated", false, testNoLossNoDup},
		{"AdminListKeepsLetters", false, testAdminListKeeps},
		{"AdminRedriveByID", false, testAdminRedriveByID},
		{"AdminRedriveAll", false, testAdminRedriveAll},
		{"AdminRedriveInterrupted", false, testAdminRedriveInterrupted},
		{"AdminPoison", false, testAdminPoison},
		{"AdminPurge", false, testAdminPurge},
		{"AdminStats", false, testAdminStats},
		{"AdminPurgeDeleteQueue", false, testAdminPurgeDeleteQueue},
		{"LeaseHandover", false, testLeaseHandover},
		{"LeaseContextAndClose", false, testLeaseContextAndClose},
		{"PauseResume", false, testPauseResume},
		{"StopBurnsNoAttempt", false, testStopBurnsNoAttempt},
		{"PauseBurnsNoAttempt", false, testPauseBurnsNoAttempt},
		{"QueueNameLimits", true, testQueueNameLimits},
		{"RetryMaxWithinLongestWait", true, testRetryMaxWithinLongestWait},
		{"ReservedHeaders", false, testReservedHeaders},
		{"QueueRulesAuthority", false, testQueueRulesAuthority},
		{"PayloadIsOneValue", false, testPayloadIsOneValue},
		{"DeclareErrorNamesQueueOnce", false, testDeclareErrorNamesQueueOnce},
		{"GlobalLimit", false, testGlobalLimit},
		{"LimitKey", false, testLimitKey},
		{"RateLimit", false, testRateLimit},
		{"LimitWaitBurnsNoAttempt", false, testLimitWaitBurnsNoAttempt},
	}
	for _, c := range cases {
		if f.OnlyWaits && !c.waits {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, f, newBackend)
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func wantErrIs(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want one wrapping %v", what, err, target)
	}
}

func wantContains(t *testing.T, s, sub, what string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it to contain %q", what, s, sub)
	}
}
