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
	if len(s.Request.Raw) > 0 && s.Request.Raw[0] == '{' {
		var body struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(s.Request.Raw, &body) == nil && body.Model != "" {
			return body.Model
		}
	}
	if meta != nil {
		return meta.Model
	}
	return ""
}
