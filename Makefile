# The one test command (README): installs what the tests need, then runs
# every check CI runs. .ci/run calls exactly this.
.PHONY: test run bench
test:
	bash scripts/test.sh

run:
	go run ./cmd/agentrt run "what is 21*2+5"

bench:
	go test -run '^$$' -bench . -benchmem -count 6 . | tee bench.out
