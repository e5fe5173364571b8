package tape

import "encoding/json"

// StepModel is the model a step asked for: its request's "model" parameter, else the model
// its raw request body names (a tape whose params were not derived names it there only),
// else meta's model ("" when meta is nil). Exports, the dataset, inspect, cost and the
// gateway's breaker all name a step's model by it.
func StepModel(meta *Meta, s *Step) string {
	if m := ParamModel(s); m != "" {
		return m
	}
	if m := BodyModel(s.Request.Raw); m != "" {
		return m
	}
	if meta != nil {
		return meta.Model
	}
	return ""
}

// BodyModel is the "model" field of a raw request body: "" when it is absent or not a
// string, or when the body is not a JSON object.
func BodyModel(raw []byte) string {
	var v struct {
		Model json.RawMessage `json:"model"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Model, &s) != nil {
		return ""
	}
	return s
}

// ParamModel is the "model" parameter of a step's request ("" when there is none): what
// StepModel reads first, without going back to the raw body, for a caller that has just
// derived the params from it (the gateway's breaker).
func ParamModel(s *Step) string {
	var m string
	if raw, ok := s.Request.Params["model"]; ok {
		json.Unmarshal(raw, &m)
	}
	return m
}
