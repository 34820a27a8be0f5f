// rawcall is the benchmarks' Go gRPC client: it sends requests given as encoded bytes and times
// each call from its send until it returns (the response and its status received), without
// decoding the response. Why: the
// benchmarks' Node client pauses for its own collector (3-10 ms a scavenge here) inside the calls
// it times, and ghz, the other Go client they use, decodes every response through reflection
// (3-4 ms for a 100-event slice); what is left here is the server's and the machine's share.
//
// It serves one call at a time for the process that starts it (test/bench/lib/rawcall.ts), so
// that process can interleave these calls with its own, round by round. Each stdin line is
//
//	<full method, /package.Service/Method> <request, base64>
//
// and is answered by one stdout line: "ok <latency ns> <response, base64>" or
// "error <gRPC code> <message>". All calls share one HTTP/2 connection, opened before the first.
// A bearer token in the environment (RAWCALL_BEARER_TOKEN, kept off the command line) is sent as
// every call's authorization. A call not answered in 30 s fails (DEADLINE_EXCEEDED), so a server
// that died mid-run ends the benchmark instead of hanging it.
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const callTimeout = 30 * time.Second

// rawCodec passes bytes through: requests arrive encoded, responses are kept as received.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = data
	return nil
}

// Name is the content subtype: "proto", as the server expects (application/grpc+proto).
func (rawCodec) Name() string { return "proto" }

func main() {
	addr := flag.String("addr", "", "host:port of a plaintext gRPC server")
	flag.Parse()
	if *addr == "" {
		fail("-addr is required")
	}
	conn, err := grpc.NewClient("passthrough:///"+*addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		fail("connect: " + err.Error())
	}
	defer conn.Close()
	conn.Connect()

	ctx := context.Background()
	if token := os.Getenv("RAWCALL_BEARER_TOKEN"); token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	for in.Scan() {
		method, encoded, ok := strings.Cut(in.Text(), " ")
		if !ok {
			fail("a line must be '<method> <request base64>'")
		}
		req, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			fail("request: " + err.Error())
		}
		var res []byte
		callCtx, cancel := context.WithTimeout(ctx, callTimeout)
		start := time.Now()
		err = conn.Invoke(callCtx, method, &req, &res, grpc.WaitForReady(true))
		elapsed := time.Since(start)
		cancel()
		if err != nil {
			st := status.Convert(err)
			fmt.Fprintf(out, "error %d %s\n", st.Code(), strings.ReplaceAll(st.Message(), "\n", " "))
		} else {
			fmt.Fprintf(out, "ok %d %s\n", elapsed.Nanoseconds(), base64.StdEncoding.EncodeToString(res))
		}
		if err := out.Flush(); err != nil {
			fail("stdout: " + err.Error())
		}
	}
	if err := in.Err(); err != nil {
		fail("stdin: " + err.Error())
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "rawcall: "+message)
	os.Exit(2)
}
