// Package faults holds the fault suite: the RabbitMQ backend under forced
// connection closes, broker restarts (with global limits' tokens held too),
// a killed worker, a crash-looping job, a resource alarm and a black-holed
// connection, against the local broker.
//
// It disrupts the broker, so it runs on its own, after every other package:
// make test-faults (which make test calls last) sets QUEUEY_FAULTS=1;
// without it the tests skip. Nothing else may use the broker meanwhile.
package faults
