package channeltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TelegramAPI is a fake Telegram Bot API server: it answers the methods
// the telegram channel calls as https://core.telegram.org/bots/api
// documents them, and keeps the calls. Fail, when set, may answer a call
// with an error instead (its JSON); Hold, when set, holds the answer of a
// call for which it returns a channel, until the channel is closed (n
// counts the method's calls, this one's included). Both are called with
// the server's lock held.
type TelegramAPI struct {
	URL   string
	Token string

	t     testing.TB
	mu    sync.Mutex
	calls []TelegramCall
	next  int64
	Fail  func(method string, n int) string
	Hold  func(method string, n int) chan struct{}
	// Files are the files getFile knows, by file_id: their bytes.
	Files map[string][]byte
	texts map[float64]string // what each message sent says now, by id
}

// TelegramCall is a call of the Bot API: its method and its JSON body.
type TelegramCall struct {
	Method string
	Req    map[string]any
}

// NewTelegramAPI starts a fake Bot API for the bot of token.
func NewTelegramAPI(t testing.TB, token string) *TelegramAPI {
	a := &TelegramAPI{t: t, Token: token, texts: map[float64]string{}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

func (a *TelegramAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+a.Token+"/files/"); ok {
		// A file's download (https://core.telegram.org/bots/api#getfile).
		a.mu.Lock()
		data, found := a.Files[id]
		a.mu.Unlock()
		if !found {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = w.Write(data)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+a.Token+"/")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		a.t.Errorf("%s: a body that is not JSON: %v", method, err)
	}
	a.mu.Lock()
	if a.Fail != nil {
		if e := a.Fail(method, len(a.calls)); e != "" {
			a.mu.Unlock()
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, e)
			return
		}
	}
	if method == "editMessageText" {
		// https://core.telegram.org/bots/api#editmessagetext: an edit
		// that changes nothing is an error of its own.
		mid, _ := req["message_id"].(float64)
		if a.texts[mid] == req["text"] && req["reply_markup"] == nil {
			a.mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"}`)
			return
		}
		a.texts[mid], _ = req["text"].(string)
	}
	a.calls = append(a.calls, TelegramCall{method, req})
	if method == "sendMessage" {
		a.next++ // message ids count the messages sent
		a.texts[float64(a.next)], _ = req["text"].(string)
	}
	id := a.next
	var hold chan struct{}
	if a.Hold != nil {
		n := 0
		for _, c := range a.calls {
			if c.Method == method {
				n++
			}
		}
		hold = a.Hold(method, n)
	}
	a.mu.Unlock()
	if hold != nil {
		<-hold
	}
	switch method {
	case "getFile":
		id, _ := req["file_id"].(string)
		data, found := a.Files[id]
		if !found {
			_, _ = io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: invalid file_id"}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": map[string]any{"file_id": id, "file_unique_id": "u" + id,
			"file_size": len(data), "file_path": "files/" + id}})
	case "getMe":
		_, _ = io.WriteString(w, `{"ok":true,"result":{"id":123456,"is_bot":true,"first_name":"Support","username":"support_bot"}}`)
	case "getWebhookInfo":
		_, _ = io.WriteString(w, `{"ok":true,"result":{"url":"https://agents.example.com/v1/channels/tg/webhook","has_custom_certificate":false,"pending_update_count":0}}`)
	case "sendMessage":
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": map[string]any{"message_id": id, "chat": map[string]any{"id": req["chat_id"]}, "date": 1700000000, "text": req["text"]}})
	default:
		_, _ = io.WriteString(w, `{"ok":true,"result":true}`)
	}
}

// Of returns the bodies of the calls of method, in order.
func (a *TelegramAPI) Of(method string) []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]any
	for _, c := range a.calls {
		if c.Method == method {
			out = append(out, c.Req)
		}
	}
	return out
}

// Set runs fn with the server's lock held: to change Fail or Hold while it
// serves.
func (a *TelegramAPI) Set(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fn()
}

// TelegramUpdate is a message update as the Bot API's documentation shows
// one (https://core.telegram.org/bots/api#update, #message): a private
// chat with user 111111111.
func TelegramUpdate(updateID, messageID int, text string) string {
	return TelegramUpdateIn(111111111, updateID, messageID, text)
}

// TelegramUpdateIn is TelegramUpdate in the private chat of user chat.
func TelegramUpdateIn(chat int64, updateID, messageID int, text string) string {
	b, _ := json.Marshal(map[string]any{"update_id": updateID, "message": map[string]any{"message_id": messageID,
		"from": map[string]any{"id": chat, "is_bot": false, "first_name": "Ana", "username": "ana_k", "language_code": "en"},
		"chat": map[string]any{"id": chat, "first_name": "Ana", "username": "ana_k", "type": "private"},
		"date": 1700000000, "text": text}})
	return string(b)
}
