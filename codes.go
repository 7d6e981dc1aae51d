package agentrt

import (
	"net/http"
	"sort"

	"github.com/agentrt/agentrt/model"
)

// Error codes: the stable, machine-readable Code of an *Error and of an
// error event. docs/errors.md lists each with its meaning; Codes returns
// them with their recoverability, the CLI's exit code and the HTTP status
// the server answers with. Compare codes with these constants, never with
// string literals. Model failures keep the codes of package model
// (model.CodeRateLimited, model.CodeTimeout, …): a *model.Error gives its
// code to the *Error and to the error event; the catalog lists them too.
const (
	// Kinds: each kind's own code, for an *Error without a code of its own.
	CodeModel    = string(FailModel)
	CodeTool     = string(FailTool)
	CodeStore    = string(FailStore)
	CodeConfig   = string(FailConfig)
	CodeLimit    = string(FailLimit)
	CodeHook     = string(FailHook)
	CodeCanceled = string(FailCanceled)
	CodeInput    = string(FailInput)
	CodeState    = string(FailState)
	CodePolicy   = string(FailPolicy)
	CodeInternal = string(FailInternal)

	// Sessions.
	CodeNotFound      = "not_found"      // no such session (in this tenant)
	CodeNoSession     = "no_session"     // the call names no session
	CodeSessionExists = "session_exists" // a session of that id exists
	CodeUnknownAgent  = "unknown_agent"  // the runner has no agent of that name
	CodeNoAgent       = "no_agent"       // no agent named and no default agent
	CodeWrongAgent    = "wrong_agent"    // the session belongs to another agent
	CodeProtected     = "protected"      // a hidden session (a rule log, a claim): not run; not deleted unless forced
	CodeBadSeq        = "bad_seq"        // a seq outside the session's log
	CodeBadHistory    = "bad_history"    // a conversation to import that does not hold together
	CodeNotDeletable  = "not_deletable"  // one turn of a session that holds others: deleted only with the session

	// Runs and their sessions.
	CodeBusy            = "busy"              // a run of this process uses the session
	CodeClosed          = "closed"            // the runner is closed
	CodeLeaseHeld       = "lease_held"        // another process runs the session
	CodeLeaseLost       = "lease_lost"        // another process took the session over
	CodeLeaseExpired    = "lease_expired"     // the lease could not be renewed in time
	CodeNoLeases        = "no_leases"         // the store has no leases (Recover needs them)
	CodeConflict        = "conflict"          // another writer advanced the session
	CodeEmptyInput      = "empty_input"       // the input is empty
	CodeBadPart         = "bad_part"          // an input part that is neither text, JSON data nor a file that can be read
	CodeInputTooLarge   = "input_too_large"   // the input is over the size allowed
	CodeURLRefused      = "url_refused"       // a URL an input names that the server does not fetch
	CodeUnfinishedRun   = "unfinished_run"    // a crashed run must be resumed first
	CodeWaiting         = "waiting"           // the session waits for a person
	CodeNothingToResume = "nothing_to_resume" // the session has no run to continue
	CodeNotRunning      = "not_running"       // the session has no run in progress
	CodeNotHeld         = "not_held"          // a tool call not waiting to run in this process (RunCall)
	CodeSignalInterrupt = "sigint"            // the run was stopped by Ctrl-C (ErrSignalInterrupt)
	CodeEndNotStored    = "end_not_stored"    // the run stopped without storing how it ended
	CodeCrashLoop       = "crash_loop"        // resumed too often without progress
	CodeWatchBehind     = "watch_behind"      // a watcher could not read the events it missed
	CodeNoControl       = "no_control"        // the store cannot carry control requests
	CodeInterrupted     = "interrupted"       // the run was interrupted

	CodeStoreUnavailable = "store_unavailable" // the store refuses writes (revive.go)

	// Human requests.
	CodeUnknownRequest  = "unknown_request"  // no such pending request
	CodeAlreadyResolved = "already_resolved" // the request was answered already
	CodeBadDecision     = "bad_decision"     // a decision the request does not take
	CodeBadArguments    = "bad_arguments"    // edited arguments the tool refuses
	CodeBadResult       = "bad_result"       // a confirmed result that is not JSON
	CodeEmptyAnswer     = "empty_answer"     // an empty answer
	CodeBadAnswer       = "bad_answer"       // a choice that is not an option
	CodeBadRule         = "bad_rule"         // a standing decision that cannot be made
	CodeUnknownRule     = "unknown_rule"     // no such standing decision
	CodeNoRequestIndex  = "no_request_index" // the store keeps no index of pending requests

	// Policies, executors and hooks.
	CodeNoExecutor     = "no_executor"      // no executor for the instruction
	CodeBadInstruction = "bad_instruction"  // an instruction that cannot be carried out
	CodeNoProgress     = "no_progress"      // a step that changed nothing
	CodePanic          = "panic"            // a policy or an executor panicked
	CodeHookPanic      = "hook_panic"       // a hook panicked
	CodeBadPlan        = "bad_plan"         // a plan that does not check
	CodeBadOverrides   = "bad_overrides"    // per-run overrides that cannot apply
	CodeUnknownModel   = "unknown_model"    // a model the agent cannot change to
	CodeBadClientTools = "bad_client_tools" // client tools declared for a run that cannot be offered
	CodeLoopDetected   = "loop_detected"    // the model repeats itself
	CodeModelError     = "model_error"      // a model failure of no known kind
	CodeMemoryWrite    = "memory_write"     // the turn could not be remembered
	CodeSubagentFailed = "failed"           // a sub-agent failed without saying why

	// Budgets: the run pauses with the limit's key as its code and reason
	// (docs/configuration.md, Budgets).
	CodeMaxSteps          = "max_steps"            // tool calls in one turn
	CodeMaxTokens         = "max_tokens"           // tokens in one turn
	CodeMaxCostUSD        = "max_cost_usd"         // cost of one turn
	CodeMaxTurnDuration   = "max_turn_duration"    // time of one turn
	CodeSessionMaxTokens  = "session_max_tokens"   // tokens of the whole session
	CodeSessionMaxCostUSD = "session_max_cost_usd" // cost of the whole session

	// Gateway: inputs from the outside world (package gateway).
	CodeUnknownSource     = "unknown_source"      // an input names no source, or one that maps to no session
	CodeBadSessionID      = "bad_session_id"      // an input's session is not a usable session id
	CodeKeyConflict       = "key_conflict"        // an idempotency key given to other content
	CodeEngine            = "engine"              // the engine (Config.Engine) did not take a run
	CodeBadIdempotencyKey = "bad_idempotency_key" // an idempotency key longer than the gateway takes
	CodeInputRejected     = "input_rejected"      // the source's turn runs, and its policy rejects input meanwhile
	CodeSourceFull        = "source_full"         // the source has as many inputs, or bytes, waiting as it may
	CodeModuleFailed      = "module_failed"       // a module of the turn failed, panicked or timed out
	CodeTurnStopped       = "turn_stopped"        // a module stopped the turn, with its reason

	// Server: requests the HTTP server refuses before they reach a
	// session (package server, agentrt serve).
	CodeUnauthorized     = "unauthorized"       // no API key, or one the server does not know
	CodeOriginNotAllowed = "origin_not_allowed" // a browser page of an origin the server does not allow
	CodeForbidden        = "forbidden"          // the key may not use what the request names (another key's MCP session)
	CodeMalformedRequest = "malformed_request"  // the request's JSON or parameters are malformed
	CodeBodyTooLarge     = "body_too_large"     // the request's body is over the server's limit
	CodeTooManyRequests  = "too_many_requests"  // the API key is over its rate limit
	CodeTooManyStreams   = "too_many_streams"   // the API key holds as many streams as it may
	CodeNoRoute          = "no_route"           // no endpoint at that path
	CodeMethodNotAllowed = "method_not_allowed" // the endpoint does not take that method
	CodeShuttingDown     = "shutting_down"      // the server is stopping and takes no new work
	CodeRequestTimeout   = "request_timeout"    // the request took longer than the server allows
	CodeBodyTimeout      = "body_timeout"       // the request's body did not come in time

	// Browsers: requests the server's browser policy refuses before they
	// reach a route (server/origin.go; origin_not_allowed is one too).
	CodeHostNotAllowed       = "host_not_allowed"       // a Host the server does not answer to (DNS rebinding)
	CodeForwardedNotAllowed  = "forwarded_not_allowed"  // a keyless server reached through a proxy it does not trust
	CodeUnsupportedMediaType = "unsupported_media_type" // a body that does not say it is JSON
)

// exitUsage is the agentrt command's exit code for a call it refuses:
// bad input, or a session that cannot do that now.
const exitUsage = 2

// CodeInfo describes an error code.
type CodeInfo struct {
	Code    string
	Kind    ErrorKind
	Meaning string
	// Recoverable says whether trying the same thing again later may
	// succeed (an *Error may override it).
	Recoverable bool
	// Exit is the exit code of the agentrt command that ends with it: 1
	// for a failure, 2 for a call refused (bad input, or a session that
	// cannot do that now), 3 waiting for a person, 4 paused at a budget,
	// 130 stopped by Ctrl-C.
	Exit int
	// HTTP is the status the server answers a request that fails with it.
	HTTP int
}

// codeTable is the catalog; Codes and LookupCode read it. Kept sorted by
// code.
var codeTable = func() []CodeInfo {
	// A code takes its kind's verdict and exit code; the overrides below
	// say where a code differs.
	in := func(code string, kind ErrorKind, meaning string, http int) CodeInfo {
		c := CodeInfo{Code: code, Kind: kind, Meaning: meaning, HTTP: http}
		c.Recoverable = (&Error{Kind: kind}).IsRecoverable()
		c.Exit = ExitFailed
		if kind == FailInput || kind == FailState {
			c.Exit = exitUsage
		}
		return c
	}
	t := []CodeInfo{
		in(CodeModel, FailModel, "the model call failed", http.StatusBadGateway),
		in(CodeTool, FailTool, "a tool failed outside the model's reach", http.StatusBadGateway),
		in(CodeStore, FailStore, "the store failed; the stored run is resumable", http.StatusServiceUnavailable),
		in(CodeConfig, FailConfig, "the agent or the runner is misconfigured", http.StatusInternalServerError),
		in(CodeLimit, FailLimit, "a limit or a budget was reached", http.StatusUnprocessableEntity),
		in(CodeHook, FailHook, "a hook refused to go on", http.StatusUnprocessableEntity),
		in(CodeCanceled, FailCanceled, "the run was canceled (resumable)", http.StatusConflict),
		in(CodeInput, FailInput, "the input is unusable", http.StatusBadRequest),
		in(CodeState, FailState, "the session cannot do that now", http.StatusConflict),
		in(CodePolicy, FailPolicy, "the policy failed to decide", http.StatusInternalServerError),
		in(CodeInternal, FailInternal, "a bug in agentrt or in code it runs", http.StatusInternalServerError),

		in(CodeNotFound, FailInput, "no session of that id in this tenant", http.StatusNotFound),
		in(CodeNoSession, FailInput, "the call names no session", http.StatusBadRequest),
		in(CodeSessionExists, FailInput, "a session of that id exists already", http.StatusConflict),
		in(CodeUnknownAgent, FailInput, "the runner has no agent of that name", http.StatusNotFound),
		in(CodeNoAgent, FailInput, "no agent was named and there is no default agent", http.StatusBadRequest),
		in(CodeWrongAgent, FailInput, "the session belongs to another agent", http.StatusConflict),
		in(CodeProtected, FailInput, "the session is hidden (an agent's rule log, a claim): no turn runs in it, and it is deleted only when forced", http.StatusForbidden),
		in(CodeBadSeq, FailInput, "the seq is outside the session's log", http.StatusBadRequest),
		in(CodeBadHistory, FailInput, "the conversation to import does not hold together (the message says where)", http.StatusBadRequest),
		in(CodeNotDeletable, FailInput, "the response is one turn of a session that holds other turns: it is deleted only with its session", http.StatusConflict),

		in(CodeBusy, FailState, "a run of this process is using the session", http.StatusConflict),
		in(CodeClosed, FailState, "the runner is closed", http.StatusServiceUnavailable),
		in(CodeLeaseHeld, FailState, "another process is running the session (the message says which, and until when)", http.StatusConflict),
		in(CodeLeaseLost, FailState, "another process took the session over; this run stopped without writing", http.StatusConflict),
		in(CodeLeaseExpired, FailState, "the session's lease expired and could not be renewed", http.StatusConflict),
		in(CodeNoLeases, FailConfig, "the store has no leases, which recovery needs", http.StatusNotImplemented),
		in(CodeConflict, FailStore, "another writer advanced the session; reload and try again", http.StatusConflict),
		in(CodeEmptyInput, FailInput, "the input is empty", http.StatusBadRequest),
		in(CodeBadPart, FailInput, "an input part is neither text, JSON data nor a file the server can read (its type, its bytes, a URL it could not fetch, or a field another type has)", http.StatusBadRequest),
		in(CodeInputTooLarge, FailInput, "the input is larger than allowed", http.StatusRequestEntityTooLarge),
		in(CodeURLRefused, FailInput, "the input names a URL the server does not fetch: not http(s), a host not in server.fetch.allowed_hosts, or one that is or leads to a loopback, private or link-local address", http.StatusBadRequest),
		in(CodeUnfinishedRun, FailState, "the session's last run stopped with its process: resume it first", http.StatusConflict),
		in(CodeWaiting, FailState, "the session waits for a person to resolve its requests", http.StatusConflict),
		in(CodeNothingToResume, FailState, "the session has no run to continue", http.StatusConflict),
		in(CodeNotRunning, FailState, "the session has no run in progress", http.StatusConflict),
		in(CodeNotHeld, FailState, "a tool call that is not waiting to run in this process (Runner.RunCall: its step ran elsewhere, or the call was run or given up); an engine's worker says so, and the session's next step runs the call if it has to", http.StatusConflict),
		in(CodeEndNotStored, FailStore, "the run stopped without storing how it ended: the store still says running, and a resume goes on", http.StatusServiceUnavailable),
		in(CodeStoreUnavailable, FailStore, "the store refuses writes (a full disk, a database that is down or read-only); the runs it stopped are resumed in this process once it accepts them again", http.StatusServiceUnavailable),
		in(CodeCrashLoop, FailState, "the run crashed its process too often without progress; resume tries again", http.StatusConflict),
		in(CodeWatchBehind, FailStore, "a watcher could not read the events it missed; watch again from the seq given", http.StatusServiceUnavailable),
		in(CodeNoControl, FailConfig, "the store cannot carry control requests between processes", http.StatusNotImplemented),
		in(CodeInterrupted, FailCanceled, "the run was interrupted", http.StatusConflict),
		in(CodeSignalInterrupt, FailCanceled, "the run was stopped by Ctrl-C (or the process by SIGINT); resume goes on", http.StatusServiceUnavailable),

		in(CodeUnknownRequest, FailInput, "the session has no pending request of that id", http.StatusNotFound),
		in(CodeAlreadyResolved, FailInput, "the request was resolved already (the message says by whom and when)", http.StatusConflict),
		in(CodeBadDecision, FailInput, "the request does not take that decision", http.StatusBadRequest),
		in(CodeBadArguments, FailInput, "the edited arguments do not fit the tool's schema", http.StatusBadRequest),
		in(CodeBadResult, FailInput, "the result given for a confirmed call is not JSON", http.StatusBadRequest),
		in(CodeEmptyAnswer, FailInput, "the answer is empty", http.StatusBadRequest),
		in(CodeBadAnswer, FailInput, "the choice is not one of the request's options", http.StatusBadRequest),
		in(CodeBadRule, FailInput, "the standing decision cannot be made for that request", http.StatusBadRequest),
		in(CodeUnknownRule, FailInput, "no standing decision of that id", http.StatusNotFound),
		in(CodeNoRequestIndex, FailConfig, "the store keeps no index of the pending requests, which listing them across sessions needs", http.StatusNotImplemented),

		in(CodeNoExecutor, FailConfig, "no executor for the instruction", http.StatusInternalServerError),
		in(CodeBadInstruction, FailPolicy, "the policy gave an instruction that cannot be carried out", http.StatusInternalServerError),
		in(CodeNoProgress, FailPolicy, "the policy chose a step that changed nothing", http.StatusInternalServerError),
		in(CodePanic, FailInternal, "a policy or an executor panicked; the stack is in the error event", http.StatusInternalServerError),
		in(CodeHookPanic, FailHook, "a hook panicked", http.StatusInternalServerError),
		in(CodeBadPlan, FailInput, "the plan does not check (the message says which step)", http.StatusBadRequest),
		in(CodeBadOverrides, FailInput, "the per-run overrides cannot apply", http.StatusBadRequest),
		in(CodeUnknownModel, FailInput, "a model the agent cannot change to", http.StatusBadRequest),
		in(CodeBadClientTools, FailInput, "the client tools declared for a run cannot be offered (no name, a name twice or an agent tool's, a schema that is not a JSON object)", http.StatusBadRequest),
		in(CodeLoopDetected, FailPolicy, "the model kept repeating itself", http.StatusUnprocessableEntity),
		in(CodeModelError, FailModel, "the model failed in a way of no known kind", http.StatusBadGateway),
		in(CodeMemoryWrite, FailStore, "the turn could not be written to long-term memory", http.StatusServiceUnavailable),
		in(CodeSubagentFailed, FailTool, "a sub-agent failed without an error of its own", http.StatusBadGateway),

		in(CodeMaxSteps, FailLimit, "the turn reached limits.max_steps tool calls; the run pauses", http.StatusUnprocessableEntity),
		in(CodeMaxTokens, FailLimit, "the turn reached limits.max_tokens; the run pauses", http.StatusUnprocessableEntity),
		in(CodeMaxCostUSD, FailLimit, "the turn reached limits.max_cost_usd; the run pauses", http.StatusUnprocessableEntity),
		in(CodeMaxTurnDuration, FailLimit, "the turn ran for limits.max_turn_duration; the run pauses", http.StatusUnprocessableEntity),
		in(CodeSessionMaxTokens, FailLimit, "the session reached limits.session_max_tokens; the run pauses until the limit is raised", http.StatusUnprocessableEntity),
		in(CodeUnknownSource, FailInput, "the input names no source, or its source maps to no session", http.StatusBadRequest),
		in(CodeBadSessionID, FailInput, "the input's session (given, or its source's) is not a usable id: 1 to 128 letters, digits, '_', '.', '-', ':' or '@', not a hidden session's", http.StatusBadRequest),
		in(CodeKeyConflict, FailInput, "the idempotency key was given to another input of the source", http.StatusConflict),
		in(CodeEngine, FailState, "the engine that runs the runs (engine: temporal) did not take the run: it stays running in the store, and is handed over again", http.StatusServiceUnavailable),
		in(CodeBadIdempotencyKey, FailInput, "the idempotency key is longer than 256 bytes (gateway.MaxKeyBytes)", http.StatusBadRequest),
		in(CodeInputRejected, FailState, "the source's turn is running and its policy rejects input meanwhile; the input is kept, refused", http.StatusConflict),
		in(CodeSourceFull, FailState, "the source has as many inputs, or as many bytes, waiting for its turn as it may (gateway max_pending, max_pending_bytes); the input was not stored: send it again once its turn has answered them", http.StatusTooManyRequests),
		in(CodeModuleFailed, FailInternal, "a module of the turn failed, panicked or timed out; the turn's inputs are set aside, refused with the reason", http.StatusInternalServerError),
		in(CodeTurnStopped, FailInput, "a module stopped the turn (the reason says why); its inputs are refused with it", http.StatusUnprocessableEntity),
		in(CodeUnauthorized, FailInput, "the request has no API key (Authorization: Bearer), or one the server does not know; without keys configured, the server answers only loopback clients", http.StatusUnauthorized),
		in(CodeOriginNotAllowed, FailInput, "a web page whose origin is neither the server's own nor one of server.cors.allowed_origins sent a request that changes something (or opens a WebSocket), or asked to (a CORS preflight)", http.StatusForbidden),
		in(CodeForbidden, FailInput, "the API key may not use what the request names: an MCP session another key opened", http.StatusForbidden),
		in(CodeMalformedRequest, FailInput, "the request's JSON is malformed, has unknown fields or is nested too deep, or a parameter is unusable (the message says which)", http.StatusBadRequest),
		in(CodeBodyTooLarge, FailInput, "the request's body is larger than server.max_body_bytes", http.StatusRequestEntityTooLarge),
		in(CodeTooManyRequests, FailState, "the API key made more requests than its rate allows; Retry-After says when to try again", http.StatusTooManyRequests),
		in(CodeTooManyStreams, FailState, "the API key holds as many streams open as it may (server.max_streams, or the key's max_streams): SSE streams, WebSockets and their subscriptions, the adapters' turns; close one first", http.StatusTooManyRequests),
		in(CodeNoRoute, FailInput, "the server has no endpoint at that path", http.StatusNotFound),
		in(CodeMethodNotAllowed, FailInput, "the endpoint does not take that method (Allow lists those it takes)", http.StatusMethodNotAllowed),
		in(CodeShuttingDown, FailState, "the server is shutting down and takes no new work; another replica does", http.StatusServiceUnavailable),
		in(CodeRequestTimeout, FailState, "the request took longer than server.request_timeout; what it started goes on", http.StatusGatewayTimeout),
		in(CodeBodyTimeout, FailInput, "the request's body stopped coming for server.read_timeout, or did not come whole within server.request_timeout; the connection is closed", http.StatusRequestTimeout),
		in(CodeHostNotAllowed, FailInput, "the request's Host is not one the server answers to: a loopback name or address, or one of server.allowed_hosts (with API keys and no allowed_hosts, any)", http.StatusMisdirectedRequest),
		in(CodeForwardedNotAllowed, FailInput, "the server has no API keys and the request came through a proxy (Forwarded, X-Forwarded-For, X-Forwarded-Host, X-Real-IP); server.trusted_proxy allows it", http.StatusForbidden),
		in(CodeUnsupportedMediaType, FailInput, "the request has a body whose Content-Type is not JSON (application/json, or an application/…+json type)", http.StatusUnsupportedMediaType),
		in(CodeSessionMaxCostUSD, FailLimit, "the session reached limits.session_max_cost_usd; the run pauses until the limit is raised", http.StatusUnprocessableEntity),

		// Model failures: package model's codes, in error events.
		in(string(model.CodeRateLimited), FailModel, "the provider refused for now (HTTP 429)", http.StatusTooManyRequests),
		in(string(model.CodeContextLength), FailModel, "the request is too large for the model", http.StatusUnprocessableEntity),
		in(string(model.CodeAuth), FailModel, "the provider refused the key", http.StatusBadGateway),
		in(string(model.CodeBadRequest), FailModel, "the provider refused the request as malformed", http.StatusBadGateway),
		in(string(model.CodeServer), FailModel, "the provider or the network failed", http.StatusBadGateway),
		in(string(model.CodeStreamIncomplete), FailModel, "the stream ended without its terminator", http.StatusBadGateway),
		in(string(model.CodeTimeout), FailModel, "a watchdog stopped the model call, or the provider timed out", http.StatusGatewayTimeout),
	}
	// Overrides of the kinds' verdicts.
	for i := range t {
		switch t[i].Code {
		case string(model.CodeAuth), string(model.CodeBadRequest), string(model.CodeContextLength):
			t[i].Recoverable = false
		case CodeConflict, CodeEndNotStored, CodeWatchBehind, CodeLeaseHeld, CodeBusy, CodeLeaseExpired,
			CodeTooManyRequests, CodeTooManyStreams, CodeShuttingDown, CodeRequestTimeout, CodeSourceFull:
			t[i].Recoverable = true
		case CodeMaxSteps, CodeMaxTokens, CodeMaxCostUSD, CodeMaxTurnDuration, CodeSessionMaxTokens, CodeSessionMaxCostUSD:
			// A budget pauses the run: resume goes on (after raising
			// the limit, for the session's own).
			t[i].Recoverable, t[i].Exit = true, ExitPaused
		case CodeWaiting:
			// run and resume print how to answer the pending requests.
			t[i].Exit = ExitWaiting
		case CodeSignalInterrupt:
			t[i].Exit = ExitInterrupted
		case CodeCrashLoop:
			// The run ends failed, in its error event, rather than
			// being refused.
			t[i].Exit = ExitFailed
		}
	}
	sort.Slice(t, func(i, j int) bool { return t[i].Code < t[j].Code })
	return t
}()

// Codes returns the catalog of error codes, sorted by code.
func Codes() []CodeInfo { return append([]CodeInfo(nil), codeTable...) }

// LookupCode returns what the catalog says of code.
func LookupCode(code string) (CodeInfo, bool) {
	i := sort.Search(len(codeTable), func(i int) bool { return codeTable[i].Code >= code })
	if i < len(codeTable) && codeTable[i].Code == code {
		return codeTable[i], true
	}
	return CodeInfo{}, false
}
