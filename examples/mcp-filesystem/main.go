// Command mcp-filesystem gives an agent the tools of the reference MCP
// filesystem server (@modelcontextprotocol/server-filesystem, over
// stdio): the model writes a note, reads it back and answers. The write
// needs a person's approval, given here by the program.
//
// The model is scripted; the server is real (node). Give its entry point
// with -server (bash scripts/test.sh installs it into testdata/mcp).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/model/scripted"
	"github.com/agentrt/agentrt/session"
	"github.com/agentrt/agentrt/session/memstore"
	"github.com/agentrt/agentrt/tool"
	"github.com/agentrt/agentrt/tool/mcptool"
)

func main() {
	server := flag.String("server", "testdata/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "the filesystem server's entry point")
	flag.Parse()
	if err := run(context.Background(), *server); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-filesystem:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, server string) error {
	dir, err := os.MkdirTemp("", "agentrt-fs")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dir, _ = filepath.EvalSymlinks(dir)

	// agentrt.yaml's mcp_servers: {fs: {command: node, args: [SERVER, DIR]}}
	mcp, err := mcptool.New([]mcptool.Server{{Name: "fs", Command: "node", Args: []string{server, dir}}}, ".")
	if err != nil {
		return err
	}
	defer mcp.Close()
	tools, err := mcp.Tools(ctx, "fs")
	if err != nil {
		return err
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		return err
	}
	fmt.Printf("fs offers %d tools\n", reg.Len())

	note := strconv.Quote(filepath.Join(dir, "note.txt"))
	m := scripted.New("assistant-model",
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("fs.write_file", `{"path":`+note+`,"content":"Deploys happen on Tuesdays."}`)}},
		scripted.Reply{ToolCalls: []scripted.Call{scripted.ToolCall("fs.read_text_file", `{"path":`+note+`}`)}},
		scripted.Reply{Text: "Saved and checked: deploys happen on Tuesdays."})
	a, err := agentrt.NewAgent("assistant").Model(m).Registry(reg).ToolFilter("fs.write_file", "fs.read_text_file").
		Approval(agentrt.ApprovalPolicy{Ask: []string{"fs.write_file"}}).Build()
	if err != nil {
		return err
	}
	r, err := agentrt.NewRunner(agentrt.Config{Store: memstore.New(), Agents: []*agentrt.Agent{a}})
	if err != nil {
		return err
	}
	defer r.Close(ctx)
	res, err := agentrt.Collect(r.Run(ctx, "notes", agentrt.Input{Text: "Note that deploys happen on Tuesdays.", Agent: "assistant"}))
	if err != nil {
		return err
	}
	st, err := r.Load(ctx, "notes")
	if err != nil {
		return err
	}
	fmt.Printf("status: %s; asks: %s\n", res.Status, st.Requests[0].Question)
	if _, err := r.Resolve(ctx, "notes", st.Requests[0].ID, agentrt.Resolution{Decision: "approve", By: "ops@example.com"}); err != nil {
		return err
	}
	res, err = agentrt.Collect(r.Resume(ctx, "notes"))
	if err != nil {
		return err
	}
	for _, e := range res.Events {
		if d, ok := e.Data.(*session.ToolResult); ok {
			fmt.Printf("tool_result: %s ok=%v\n", d.Name, d.OK)
		}
	}
	fmt.Println("final:", res.Text)
	b, err := os.ReadFile(filepath.Join(dir, "note.txt"))
	if err != nil {
		return err
	}
	fmt.Printf("on disk: %s\n", b)
	return nil
}
