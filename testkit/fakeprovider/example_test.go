package fakeprovider_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tapebox/tapebox/testkit/fakeprovider"
)

// A scripted provider answers an Anthropic Messages call with the script's next turn.
func Example() {
	srv := fakeprovider.New(fakeprovider.Script{Threads: []fakeprovider.Thread{{Name: "main", Turns: []fakeprovider.Turn{
		{Text: "Hello from the script."},
	}}}})
	if err := srv.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	body := `{"model":"fake-model","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(srv.URL()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var answer struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer.Content[0].Text, answer.StopReason, len(srv.Requests()))
	// Output: Hello from the script. end_turn 1
}
