package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	hook := os.Getenv("WEBHOOK_URL")
	lambda.Start(func(ctx context.Context, ev Event) error { return Handle(ctx, http.DefaultClient, hook, ev) })
}

// Handle posts the event's notice to hook as JSON (logs it when hook is "").
func Handle(ctx context.Context, client *http.Client, hook string, ev Event) error {
	n, err := NoticeOf(ev)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(n)
	if err != nil {
		return err
	}
	if hook == "" {
		log.Printf("notice: %s", doc)
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", hook, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook %s: %w", hook, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// An error makes Lambda retry the asynchronous invocation (EventBridge's), so a
		// webhook that is down gets the notice later.
		return fmt.Errorf("webhook %s answered %s", hook, resp.Status)
	}
	return nil
}
