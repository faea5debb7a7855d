package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
)

// readParams collects a call's parameters from the query string and the
// body, which may be multipart/form-data, urlencoded or JSON, as the Bot
// API accepts. Object and array values are kept as JSON text, as clients
// send them in forms.
func readParams(r *http.Request) (map[string]string, error) {
	p := make(map[string]string)
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 50<<20))
	if err != nil {
		return nil, err
	}
	// A call without parameters may come with an empty body under any
	// content type (go-telegram/bot sends an empty multipart body).
	if len(bytes.TrimSpace(body)) == 0 {
		return p, nil
	}
	ct, mp, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		form, err := multipart.NewReader(bytes.NewReader(body), mp["boundary"]).ReadForm(32 << 20)
		if err != nil {
			return nil, fmt.Errorf("bad multipart body: %w", err)
		}
		defer form.RemoveAll()
		for k, v := range form.Value {
			p[k] = v[0]
		}
		for k := range form.File {
			p[k] = "attach://" + k
		}
	case "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, err
		}
		for k, v := range vals {
			p[k] = v[0]
		}
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, errors.New("can't parse JSON object")
		}
		for k, raw := range m {
			var str string
			switch {
			case string(raw) == "null":
			case json.Unmarshal(raw, &str) == nil:
				p[k] = str
			default:
				p[k] = string(raw)
			}
		}
	default:
		return nil, fmt.Errorf("unsupported content type %q", ct)
	}
	return p, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
