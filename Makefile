# queuey — run `make help` for the targets.

GO            ?= go

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## run the emails example on the in-memory backend (RabbitMQ when QUEUEY_AMQP_URL is set in the environment)
	$(GO) run ./examples/emails

# The RabbitMQ 4.0 node of scripts/broker4.sh, as the tests read it.
BROKER4_ENV := QUEUEY_AMQP_URL=amqp://guest:guest@127.0.0.1:5673/ QUEUEY_MANAGEMENT_URL=http://guest:guest@127.0.0.1:15673/ QUEUEY_RABBITMQ_NODE=rabbit4@localhost 'QUEUEY_RABBITMQCTL=$(CURDIR)/scripts/broker4.sh ctl'

# The broker suites that run on RabbitMQ 4.0 as well: the conformance suite
# and the backend's own tests (rabbitmq), the command and the dashboard,
# the Python and Node producers, the outbox, telemetry and the programs
# that use generated code. Left out, as they run on the main broker only:
# the fault suite (it stops the broker's app and sets alarms, and what it
# checks is the backend's recovery, which no broker version changes) and
# the cluster tests (scripts/cluster.sh makes its three nodes from the
# main broker's install); the unit, golden and memory tests need no broker.
BROKER4_PKGS := ./rabbitmq/ ./cmd/queuey/cli/ ./internal/dashboard/ ./clients/ ./outbox/ ./otelqueuey/ ./examples/... ./generated_test/adopt/

.PHONY: test
test: broker broker4 postgres chromium clients verify ## everything: set-up, verify, then the main broker's lane (unit, golden, conformance, broker, database, browser and client tests with -race on 3.x, then the fault suite) and RabbitMQ 4.0's, one after the other (QUEUEY_SERIAL_LANES= runs them at once); last PostgreSQL restarted under the outbox
	@QUEUEY_SERIAL_LANES=$${QUEUEY_SERIAL_LANES-1} ./scripts/lanes.sh \
		'main broker (3.x), then its fault suite' '$(MAKE) --no-print-directory lane-main lane-faults' \
		'RabbitMQ 4.0' '$(MAKE) --no-print-directory lane-broker4'
	@$(MAKE) --no-print-directory lane-postgres-restart

# The lanes of make test, without its set-up. Lanes that use different
# brokers can run at once (scripts/lanes.sh keeps their output apart), but
# make test runs them one after the other unless QUEUEY_SERIAL_LANES is
# set empty: on a 2-core machine the load of both lanes at once makes the
# timing of a quorum consumer's cancel race its last deliveries; the
# fault suite runs after the main lane, in the same lane, since it stops
# the main broker's app and sets alarms on it, and no other test may use
# that broker meanwhile; the PostgreSQL restart runs after every lane,
# since both lanes' outbox tests use the database.
.PHONY: lane-main lane-broker4 lane-faults lane-postgres-restart
lane-main:
	@./scripts/brokerversion.sh
	@start=$$(date +%s); \
	QUEUEY_REQUIRE_BROKER=1 QUEUEY_REQUIRE_BROWSER=1 QUEUEY_REQUIRE_CLIENTS=1 $(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/faults$$') && \
	echo "== main broker: every package passed in $$(($$(date +%s) - start))s"

lane-broker4:
	@env $(BROKER4_ENV) ./scripts/brokerversion.sh
	@mark=$$(./scripts/broker4.sh logmark); start=$$(date +%s); \
	env $(BROKER4_ENV) QUEUEY_SCREENSHOTS="$${TMPDIR:-/tmp}/queuey-dashboard-screenshots-rabbitmq4" QUEUEY_REQUIRE_BROKER=1 QUEUEY_REQUIRE_BROWSER=1 QUEUEY_REQUIRE_CLIENTS=1 $(GO) test -race -count=1 -timeout 30m $(BROKER4_PKGS) && \
	./scripts/broker4.sh deprecated "$$mark" && \
	echo "== RabbitMQ 4.0: the broker suites passed in $$(($$(date +%s) - start))s"

lane-faults:
	@start=$$(date +%s); \
	QUEUEY_FAULTS=1 QUEUEY_REQUIRE_BROKER=1 $(GO) test -count=1 -timeout 15m -v ./faults/ && \
	echo "== the fault suite passed in $$(($$(date +%s) - start))s"

lane-postgres-restart:
	@start=$$(date +%s); \
	QUEUEY_FAULTS=1 QUEUEY_REQUIRE_BROKER=1 $(GO) test -count=1 -timeout 5m -v -run '^TestPostgresRestart$$' ./outbox/ && \
	echo "== PostgreSQL restarted under the outbox: passed in $$(($$(date +%s) - start))s"

.PHONY: test-broker4
test-broker4: broker4 postgres chromium clients ## the broker suites (conformance, backend, command, dashboard, clients, outbox) with -race on RabbitMQ 4.0; fails too when its log names a deprecated feature used
	@$(MAKE) --no-print-directory lane-broker4

.PHONY: test-faults
test-faults: broker postgres ## the fault suite alone: it closes connections, restarts the broker's app, sets a memory alarm (nothing else may use the broker meanwhile); then restarts PostgreSQL under the outbox
	@$(MAKE) --no-print-directory lane-faults lane-postgres-restart

# What make check runs its tests without: no broker, database, cluster or
# network. The services' addresses point at a port where nothing listens,
# so the tests that need one skip (internal/testenv/brokertest, internal/testenv/pgtest);
# CI and the QUEUEY_REQUIRE_* switches are emptied so that they skip
# rather than fail; GOPROXY=off keeps the go command (and the modules the
# docs and generator tests build) off the network; -short skips the long
# ones (the README's install in a fresh module cache, the scale tests).
# Left out by package: the fault suite, and rabbitmq/cluster, which starts
# its three nodes.
NOSERVICE_ENV := CI= QUEUEY_REQUIRE_BROKER= QUEUEY_REQUIRE_BROWSER= QUEUEY_REQUIRE_CLIENTS= QUEUEY_FAULTS= \
	QUEUEY_AMQP_URL=amqp://guest:guest@127.0.0.1:1/ QUEUEY_MANAGEMENT_URL=http://guest:guest@127.0.0.1:1/ \
	QUEUEY_DATABASE_URL=postgres://queuey:queuey@127.0.0.1:1/queuey QUEUEY_RABBITMQCTL=false GOPROXY=off

.PHONY: check
check: ## quick, with no service (broker, database, network): verify, then the unit, golden and memory-backend tests with -short; the broker's and database's tests skip
	@start=$$(date +%s); \
	env $(NOSERVICE_ENV) $(MAKE) --no-print-directory verify && \
	env $(NOSERVICE_ENV) $(GO) test -short $$($(GO) list ./... | grep -v -e '/faults$$' -e '/rabbitmq/cluster$$') && \
	echo "== check passed in $$(($$(date +%s) - start))s"

.PHONY: test-short
test-short: ## unit tests without the broker and without -race
	$(GO) test -count=1 ./...

.PHONY: generate
generate: ## regenerate queuey_gen.go files and their queuey_schema.json records
	$(GO) generate ./...

.PHONY: verify
verify: ## gofmt, go vet, staticcheck and go.mod tidy (bench/peers too), generated code fresh (queuey-gen -check)
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) -C bench/peers mod tidy -diff
	$(GO) -C bench/peers vet ./...
	cd bench/peers && "$$($(GO) -C $(CURDIR) tool -n staticcheck)" ./...
	$(GO) tool queuey-gen -check ./...
	@test -z "$$(git ls-files --others --exclude-standard -- ':(glob)**/queuey_gen.go' ':(glob)**/queuey_schema.json')" || { echo "generated files not committed"; exit 1; }

.PHONY: bench
bench: broker ## benchmarks: memory backend, generator, RabbitMQ against the plain amqp091-go loop (prints the ratios), telemetry overhead
	@set -e; out=$$(mktemp); trap 'rm -f "$$out"' EXIT; \
	bash -o pipefail -c '$(GO) test -run "^$$" -bench . -benchmem -count=1 ./runtime/ ./bench/... ./otelqueuey/ | tee "$$0"' "$$out"; \
	echo; echo "queuey against the plain amqp091-go loop (ratio = queuey/plain, medians):"; \
	grep -ho '[a-z]*, max_priority=[0-9]*: queuey .*' "$$out"

.PHONY: bench-peers
bench-peers: broker ## queuey against river, asynq, watermill-amqp and plain amqp091-go (Redis and PostgreSQL on localhost); writes bench/peers/peers.svg
	cd bench/peers && $(GO) run . -jobs 20000 -rounds 3 -svg peers.svg

.PHONY: bench-versions
bench-versions: broker broker4 ## queuey and the plain amqp091-go loop on RabbitMQ 3.x and 4.0 in one sitting, then on classic queue versions 1 and 2 on 3.x: rates, ratios, broker CPU per job
	env QUEUEY_BENCH_BROKERS='amqp://guest:guest@127.0.0.1:5672/ amqp://guest:guest@127.0.0.1:5673/' $(GO) test -run '^$$' -bench '^(BenchmarkBrokers|BenchmarkQueueVersion)$$' -benchtime 1x -count=1 -timeout 60m ./bench/

.PHONY: bench-limits
bench-limits: broker ## global limits: what limit=1000 costs a queue of jobs that do nothing (jobs/s and broker CPU per job, against no limit), permits/s of the limiter alone beside the broker's floor, and how close limit=10 and rate=50/s shared by three workers come to what they allow
	$(GO) test -run '^$$' -bench '^(BenchmarkLimitOverhead|BenchmarkLimitPermits|BenchmarkLimitPermitsFloor|BenchmarkLimitAcrossWorkers|BenchmarkRateAcrossWorkers)$$' -benchtime 1x -count=1 -timeout 30m ./bench/

.PHONY: bench-memory
bench-memory: ## benchmarks of the in-memory backend only (no broker needed)
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./runtime/

.PHONY: dashboard
dashboard: broker ## the web dashboard at http://127.0.0.1:8080/ over the emails example's queues on the local broker, kept busy
	$(GO) run ./examples/dashboard

.PHONY: chromium
chromium: ## make sure a headless Chromium is installed for the dashboard's browser tests (installs Debian's chromium)
	@./scripts/chromium.sh >/dev/null

.PHONY: clients
clients: ## make sure the Python and Node packages in clients/ can be installed and tested (installs python3-pika, python3-msgpack, python3-venv and python3-setuptools, runs npm ci)
	./scripts/clients.sh

.PHONY: cluster
cluster: ## start the 3-node test cluster qa1..qa3 (AMQP 127.0.0.1:5681-5683) beside the main broker; it stays up (make test stops a cluster only when it started it, unless QUEUEY_KEEP_CLUSTER=1)
	./scripts/cluster.sh up

.PHONY: cluster-down
cluster-down: ## stop the 3-node test cluster and remove its state
	./scripts/cluster.sh down

.PHONY: postgres
postgres: ## make sure a PostgreSQL answers at QUEUEY_DATABASE_URL, with its role and database, for the outbox (start or install it where needed)
	./scripts/postgres.sh

.PHONY: broker
broker: ## make sure a RabbitMQ answers at QUEUEY_AMQP_URL (start or install it where needed)
	./scripts/broker.sh

.PHONY: broker4
broker4: ## start RabbitMQ 4.0 (Debian trixie's, in a chroot made once with debootstrap) beside the main broker: AMQP 127.0.0.1:5673, management 15673, node rabbit4@localhost
	./scripts/broker4.sh up

.PHONY: broker4-down
broker4-down: ## stop the RabbitMQ 4.0 node (the chroot stays for the next start)
	./scripts/broker4.sh down

# bench-lateness takes as long as its longest delay (1,000s) and more:
# LATENESS=classic runs the classic ladder's instead of the quorum one's.
LATENESS ?= quorum

.PHONY: bench-lateness
bench-lateness: broker ## lateness of 20,000 waits of 1s..1,000s enqueued at 2,000/s on the delay ladder (LATENESS=quorum or classic): p50, p99, max, broker CPU per wait; about 20 minutes
	$(GO) test -run '^$$' -bench '^BenchmarkLadderLateness$$/^$(LATENESS)$$' -benchtime 1x -count=1 -timeout 40m ./bench/

.PHONY: bench-scale
bench-scale: broker ## one worker at scale: distinct and shared deferrals (per delay mode: hold queues, rungs, ladders), 10,000 distinct waits, start and shutdown over 1,000 and 2,100 queues, idle goroutines, declaring 1,000 queues; beside the broker's floor
	$(GO) test -run '^$$' -bench Scale -benchtime 1x -count=1 -timeout 30m ./bench/
