// dapdecode reads Debug Adapter Protocol messages, each framed with its
// Content-Length header exactly as a debug adapter sent them, from standard
// input and decodes each with go-dap's typed decoder (dap.ReadProtocolMessage),
// as a Go client (Delve's tests, editors' Go tooling) would.
//
// One JSON line per message on standard output, in order:
//
//	{"index": 0, "type": "*dap.InitializeResponse"}
//	{"index": 3, "error": "Event event 'foo' is not supported (seq: 4)"}
//
// A framing error ends the input: it is printed with the index it stopped at
// and the exit code is 2. Decode errors do not stop it (the frame was read
// whole), so every bad message is reported.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/google/go-dap"
)

type result struct {
	Index   int    `json:"index"`
	Type    string `json:"type,omitempty"`
	Error   string `json:"error,omitempty"`
	Framing bool   `json:"framing,omitempty"`
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for index := 0; ; index++ {
		message, err := dap.ReadProtocolMessage(in)
		switch {
		case err == io.EOF:
			return
		case err != nil && isFraming(err):
			out.Encode(result{Index: index, Error: err.Error(), Framing: true})
			os.Exit(2)
		case err != nil:
			out.Encode(result{Index: index, Error: err.Error()})
		default:
			out.Encode(result{Index: index, Type: fmt.Sprintf("%T", message)})
		}
	}
}

// isFraming tells a broken header or a short body (the stream cannot go on)
// from a message that was read whole but did not decode.
func isFraming(err error) bool {
	if _, ok := err.(*dap.BaseProtocolError); ok {
		return true
	}
	return err == io.ErrUnexpectedEOF
}
