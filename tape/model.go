package tape

import "encoding/json"

// StepModel is the model a step asked for: its request's "model" parameter, else the model
// its raw request body names (a tape whose params were not derived names it there only),
// else meta's model ("" when meta is nil). Exports, the dataset, inspect, cost and the
// gateway's breaker all name a step's model by it.
func StepModel(meta *Meta, s *Step) string {
	if raw, ok := s.Request.Params["model"]; ok {
		var m string
		if json.Unmarshal(raw, &m) == nil && m != "" {
			return m
		}
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
