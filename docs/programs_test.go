package docs_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/tempmod"
)

// runMemoryProgram runs README.md's program on the in-memory backend as
// its Install section does (go run . after go generate) and compares what
// it prints with the text block that follows that step.
func runMemoryProgram(t *testing.T, dir string, env []string, blocks []block) {
	var want string
	for i, b := range blocks {
		if b.lang == "sh" && strings.HasSuffix(strings.TrimSpace(b.body), "go run .") &&
			i+1 < len(blocks) && blocks[i+1].lang == "text" {
			want = blocks[i+1].body
			break
		}
	}
	if want == "" {
		t.Fatal("README.md has no sh block ending in `go run .` followed by a text block of its output")
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run .: %v\n%s%s", err, out, &stderr)
	}
	if string(out) != want {
		t.Errorf("go run . printed %q, want %q as README.md shows", out, want)
	}
}

// runRabbitMQProgram builds README.md's program that dials RabbitMQ, runs
// it against the test broker (AMQP_URLS), waits until it has handled a
// job, interrupts it and checks that it stops cleanly and in time.
func runRabbitMQProgram(t *testing.T, dir string, env []string, blocks []block) {
	var pkg string
	for _, b := range blocks {
		if b.lang == "go" && strings.Contains(b.body, "rabbitmq.Dial(") {
			if name, ok := packageOf(b.body); ok && name == "main" {
				f, err := goFileOf("README.md", b)
				if err != nil {
					t.Fatal(err)
				}
				pkg = "./" + path.Dir(f.path)
			}
		}
	}
	if pkg == "" {
		t.Fatal("README.md has no package main that calls rabbitmq.Dial")
	}
	url := brokertest.Require(t)
	t.Cleanup(func() { brokertest.DeleteQueues(url, "jobs.greet", "jobs.greet.dead") })
	bin := filepath.Join(t.TempDir(), "program")
	tempmod.Go(t, dir, env, "build", "-o", bin, pkg)

	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AMQP_URLS="+url)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var mu sync.Mutex
	var out strings.Builder
	handled := make(chan struct{})
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "hello, ") {
				once.Do(func() { close(handled) })
			}
		}
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
	exited := make(chan error, 1)
	go func() { <-eof; exited <- cmd.Wait() }()

	select {
	case <-handled:
	case err := <-exited:
		t.Fatalf("the program exited (%v) before it handled a job:\n%s", err, output())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the program handled no job within 30s:\n%s", output())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("after SIGINT the program exited with %v:\n%s", err, output())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("the program did not stop within 15s of SIGINT:\n%s", output())
	}
	t.Logf("the program's output:\n%s", output())
}
