package deployed_test

// The synthesized template as the source of truth: synth, CloudFormation's
// intrinsic functions resolved against the names this "deployment" gives each
// resource, and the pieces the harness runs (functions, roles, definition, rule).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/s3zip/s3zip/internal/testenv/iameval"
)

const (
	region    = "us-east-1"
	account   = "123456789012"
	partition = "aws"
	stackName = "S3ZipStack"
)

// Resource is one template resource.
type Resource struct {
	Type       string
	Properties map[string]any
}

// Template is a synthesized stack and the cloud assembly directory it came from.
type Template struct {
	Dir       string // cdk.out
	Resources map[string]Resource
	assets    map[string]string // S3 object key of an asset → its path in Dir
}

// LoadTemplate reads <dir>/<stack>.template.json and <stack>.assets.json.
func LoadTemplate(dir string) (*Template, error) {
	raw, err := os.ReadFile(filepath.Join(dir, stackName+".template.json"))
	if err != nil {
		return nil, err
	}
	var doc struct{ Resources map[string]Resource }
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	t := &Template{Dir: dir, Resources: doc.Resources, assets: map[string]string{}}
	raw, err = os.ReadFile(filepath.Join(dir, stackName+".assets.json"))
	if err != nil {
		return nil, err
	}
	var assets struct {
		Files map[string]struct {
			Source       struct{ Path string }
			Destinations map[string]struct{ ObjectKey string }
		}
	}
	if err := json.Unmarshal(raw, &assets); err != nil {
		return nil, fmt.Errorf("assets: %w", err)
	}
	for _, f := range assets.Files {
		for _, d := range f.Destinations {
			t.assets[d.ObjectKey] = filepath.Join(dir, f.Source.Path)
		}
	}
	return t, nil
}

// Of returns the logical IDs of resources of a type, sorted.
func (t *Template) Of(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Name is the physical name this deployment gives a resource: the explicit
// name property when the template sets one, else one generated the way
// CloudFormation does (stack name, logical ID, a suffix), lower case for buckets.
func (t *Template) Name(id string) string {
	r := t.Resources[id]
	for _, p := range []string{"BucketName", "FunctionName", "RoleName", "StateMachineName", "LogGroupName", "Name"} {
		switch v := r.Properties[p].(type) {
		case string:
			return v
		case map[string]any: // a name made of the stack's name (${AWS::StackName}-Archive)
			if s, err := t.Resolve(v); err == nil {
				if name, ok := s.(string); ok {
					return name
				}
			}
		}
	}
	name := stackName + "-" + id
	if len(name) > 50 {
		name = name[:50]
	}
	name += "-7q3kz1"
	if r.Type == "AWS::S3::Bucket" {
		name = strings.ToLower(name)
	}
	return name
}

// Arn is the ARN of a resource (Fn::GetAtt [id, Arn]).
func (t *Template) Arn(id string) (string, error) {
	n := t.Name(id)
	switch t.Resources[id].Type {
	case "AWS::S3::Bucket":
		return "arn:" + partition + ":s3:::" + n, nil
	case "AWS::Lambda::Function":
		return fmt.Sprintf("arn:%s:lambda:%s:%s:function:%s", partition, region, account, n), nil
	case "AWS::IAM::Role":
		return fmt.Sprintf("arn:%s:iam::%s:role/%s", partition, account, n), nil
	case "AWS::StepFunctions::StateMachine":
		return fmt.Sprintf("arn:%s:states:%s:%s:stateMachine:%s", partition, region, account, n), nil
	case "AWS::Logs::LogGroup":
		return fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s:*", partition, region, account, n), nil
	case "AWS::Events::Rule":
		return fmt.Sprintf("arn:%s:events:%s:%s:rule/%s", partition, region, account, n), nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.Arn: type %s not modelled", id, t.Resources[id].Type)
}

func (t *Template) ref(name string) (string, error) {
	switch name {
	case "AWS::Partition":
		return partition, nil
	case "AWS::Region":
		return region, nil
	case "AWS::AccountId":
		return account, nil
	case "AWS::StackName":
		return stackName, nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	}
	r, ok := t.Resources[name]
	if !ok {
		return "", fmt.Errorf("Ref %s: no such resource or pseudo parameter", name)
	}
	switch r.Type {
	case "AWS::StepFunctions::StateMachine":
		return t.Arn(name) // Ref of a state machine is its ARN
	}
	return t.Name(name), nil
}

var subVar = regexp.MustCompile(`\$\{([^}!]+)\}`)

// Resolve evaluates CloudFormation intrinsic functions in v.
func (t *Template) Resolve(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				switch fn {
				case "Ref":
					return t.ref(arg.(string))
				case "Fn::GetAtt":
					a := arg.([]any)
					if a[1] != "Arn" {
						return nil, fmt.Errorf("Fn::GetAtt %v: only Arn is modelled", a)
					}
					return t.Arn(a[0].(string))
				case "Fn::Join":
					a := arg.([]any)
					parts, err := t.Resolve(a[1])
					if err != nil {
						return nil, err
					}
					var ss []string
					for _, p := range parts.([]any) {
						ss = append(ss, fmt.Sprint(p))
					}
					return strings.Join(ss, a[0].(string)), nil
				case "Fn::Sub":
					s, ok := arg.(string)
					if !ok {
						return nil, fmt.Errorf("Fn::Sub with variables is not modelled")
					}
					var err error
					out := subVar.ReplaceAllStringFunc(s, func(m string) string {
						name := m[2 : len(m)-1]
						var r string
						var e error
						if id, ok := strings.CutSuffix(name, ".Arn"); ok {
							r, e = t.Arn(id)
						} else {
							r, e = t.ref(name)
						}
						if e != nil {
							err = e
						}
						return r
					})
					return out, err
				}
			}
		}
		out := map[string]any{}
		for k, e := range v {
			r, err := t.Resolve(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			r, err := t.Resolve(e)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// Function is an AWS::Lambda::Function as the template declares it.
type Function struct {
	ID, Name, Arn  string
	Env            map[string]string
	TimeoutSeconds int
	MemoryMB       int
	// EphemeralStorageMB is the size of its /tmp (EphemeralStorage.Size).
	EphemeralStorageMB int
	Architectures      []string
	Handler, Runtime   string
	Role               string // logical ID of its role
	Bootstrap          string // the packaged binary in the cloud assembly
}

// BucketKMSKey is the key ARN a template bucket's default encryption uses
// ("" for SSE-S3 or none).
func (t *Template) BucketKMSKey(id string) string {
	enc, _ := t.Resources[id].Properties["BucketEncryption"].(map[string]any)
	for _, rule := range asList(enc["ServerSideEncryptionConfiguration"]) {
		def, _ := rule.(map[string]any)["ServerSideEncryptionByDefault"].(map[string]any)
		if def["SSEAlgorithm"] != "aws:kms" {
			continue
		}
		if v, err := t.Resolve(def["KMSMasterKeyID"]); err == nil {
			if arn, ok := v.(string); ok {
				return arn
			}
		}
	}
	return ""
}

// Functions returns every function of the template.
func (t *Template) Functions() ([]Function, error) {
	var out []Function
	for _, id := range t.Of("AWS::Lambda::Function") {
		props, err := t.Resolve(t.Resources[id].Properties)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", id, err)
		}
		p := props.(map[string]any)
		arn, _ := t.Arn(id)
		f := Function{ID: id, Name: t.Name(id), Arn: arn, Env: map[string]string{}}
		if e, ok := p["Environment"].(map[string]any); ok {
			for k, v := range e["Variables"].(map[string]any) {
				f.Env[k] = fmt.Sprint(v)
			}
		}
		f.TimeoutSeconds = intOf(p["Timeout"], 3) // Lambda's default
		f.MemoryMB = intOf(p["MemorySize"], 128)
		storage, _ := p["EphemeralStorage"].(map[string]any)
		f.EphemeralStorageMB = intOf(storage["Size"], 512) // Lambda's default /tmp
		for _, a := range asList(p["Architectures"]) {
			f.Architectures = append(f.Architectures, fmt.Sprint(a))
		}
		f.Handler, _ = p["Handler"].(string)
		f.Runtime, _ = p["Runtime"].(string)
		roleArn, _ := p["Role"].(string)
		for _, rid := range t.Of("AWS::IAM::Role") {
			if a, _ := t.Arn(rid); a == roleArn {
				f.Role = rid
			}
		}
		switch code := t.Resources[id].Properties["Code"].(type) {
		case string: // a local directory `aws cloudformation package` zips and uploads (standalone_test.go)
			f.Bootstrap = filepath.Join(t.Dir, code, f.Handler)
		case map[string]any:
			key, _ := code["S3Key"].(string)
			dir, ok := t.assets[key]
			if !ok {
				return nil, fmt.Errorf("function %s: code asset %q is not in the cloud assembly", id, key)
			}
			f.Bootstrap = filepath.Join(dir, f.Handler)
		default:
			return nil, fmt.Errorf("function %s: Code %v is neither an S3 location nor a local path", id, code)
		}
		out = append(out, f)
	}
	return out, nil
}

func intOf(v any, def int) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case string:
		var i int
		if _, err := fmt.Sscan(n, &i); err == nil {
			return i
		}
	}
	return def
}

func asList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// RolePolicies returns each role's identity policies (inline Policies and the
// AWS::IAM::Policy resources attached to it), by role logical ID. A managed
// policy attached to a role is an error: its statements are not in the template.
func (t *Template) RolePolicies() (map[string][]iameval.Policy, error) {
	out := map[string][]iameval.Policy{}
	add := func(role, name string, doc any) error {
		resolved, err := t.Resolve(doc)
		if err != nil {
			return fmt.Errorf("policy %s: %w", name, err)
		}
		raw, _ := json.Marshal(resolved)
		p, err := iameval.ParseDocument(name, raw)
		if err != nil {
			return err
		}
		out[role] = append(out[role], p)
		return nil
	}
	for _, rid := range t.Of("AWS::IAM::Role") {
		props := t.Resources[rid].Properties
		if m := props["ManagedPolicyArns"]; m != nil {
			return nil, fmt.Errorf("role %s has managed policies %v: their statements are not in the template", rid, m)
		}
		for _, p := range asList(props["Policies"]) {
			pm := p.(map[string]any)
			if err := add(rid, fmt.Sprint(pm["PolicyName"]), pm["PolicyDocument"]); err != nil {
				return nil, err
			}
		}
		out[rid] = append(out[rid], []iameval.Policy{}...)
	}
	for _, pid := range t.Of("AWS::IAM::Policy") {
		props := t.Resources[pid].Properties
		for _, r := range asList(props["Roles"]) {
			role := r.(map[string]any)["Ref"].(string)
			if err := add(role, pid, props["PolicyDocument"]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// StateMachine is the deployed state machine: its ARN, role and the
// definition CloudFormation would hand to Step Functions.
type StateMachine struct {
	ID, Arn    string
	Role       string // logical ID
	Definition []byte
}

// StateMachine reads the archive workflow's state machine.
func (t *Template) StateMachine() (*StateMachine, error) { return t.StateMachineOf("ArchiveWorkflow") }

// StateMachineOf reads the (single) state machine whose logical ID starts
// with construct: DefinitionString, or the DefinitionS3Location asset, with
// DefinitionSubstitutions applied as text, as CloudFormation does before
// parsing.
func (t *Template) StateMachineOf(construct string) (*StateMachine, error) {
	var ids []string
	for _, id := range t.Of("AWS::StepFunctions::StateMachine") {
		if strings.HasPrefix(id, construct) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		return nil, fmt.Errorf("template has %d state machines of %s, want 1", len(ids), construct)
	}
	id := ids[0]
	props, err := t.Resolve(t.Resources[id].Properties)
	if err != nil {
		return nil, fmt.Errorf("state machine %s: %w", id, err)
	}
	p := props.(map[string]any)
	var text string
	switch {
	case p["DefinitionString"] != nil:
		text = fmt.Sprint(p["DefinitionString"])
	case p["DefinitionS3Location"] != nil:
		path := ""
		if local, ok := p["DefinitionS3Location"].(string); ok {
			path = filepath.Join(t.Dir, local) // a local file `aws cloudformation package` uploads (standalone_test.go)
		} else {
			key := fmt.Sprint(p["DefinitionS3Location"].(map[string]any)["Key"])
			if path, ok = t.assets[key]; !ok {
				return nil, fmt.Errorf("state machine %s: definition asset %q is not in the cloud assembly", id, key)
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text = string(raw)
	default:
		return nil, fmt.Errorf("state machine %s has no definition", id)
	}
	subs, _ := p["DefinitionSubstitutions"].(map[string]any)
	var missing []string
	text = subVar.ReplaceAllStringFunc(text, func(m string) string {
		v, ok := subs[m[2:len(m)-1]]
		if !ok {
			missing = append(missing, m)
			return m
		}
		return fmt.Sprint(v)
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("state machine %s: no DefinitionSubstitutions for %v", id, missing)
	}
	if !json.Valid([]byte(text)) {
		return nil, fmt.Errorf("state machine %s: definition is not JSON after substitution", id)
	}
	arn, _ := t.Arn(id)
	roleArn := fmt.Sprint(p["RoleArn"])
	sm := &StateMachine{ID: id, Arn: arn, Definition: []byte(text)}
	for _, rid := range t.Of("AWS::IAM::Role") {
		if a, _ := t.Arn(rid); a == roleArn {
			sm.Role = rid
		}
	}
	return sm, nil
}

// Rule is an EventBridge rule with its (single) target.
type Rule struct {
	ID            string
	Pattern       map[string]any
	TargetArn     string
	TargetRole    string // logical ID of the role EventBridge assumes
	InputPathsMap map[string]string
	InputTemplate string
}

// Rules returns the template's EventBridge rules.
func (t *Template) Rules() ([]Rule, error) {
	var out []Rule
	for _, id := range t.Of("AWS::Events::Rule") {
		props, err := t.Resolve(t.Resources[id].Properties)
		if err != nil {
			return nil, fmt.Errorf("rule %s: %w", id, err)
		}
		p := props.(map[string]any)
		targets := asList(p["Targets"])
		if len(targets) != 1 {
			return nil, fmt.Errorf("rule %s has %d targets, want 1", id, len(targets))
		}
		tg := targets[0].(map[string]any)
		r := Rule{ID: id, Pattern: p["EventPattern"].(map[string]any), TargetArn: fmt.Sprint(tg["Arn"]), InputPathsMap: map[string]string{}}
		for _, rid := range t.Of("AWS::IAM::Role") {
			if a, _ := t.Arn(rid); a == tg["RoleArn"] {
				r.TargetRole = rid
			}
		}
		if it, ok := tg["InputTransformer"].(map[string]any); ok {
			for k, v := range it["InputPathsMap"].(map[string]any) {
				r.InputPathsMap[k] = fmt.Sprint(v)
			}
			r.InputTemplate = fmt.Sprint(it["InputTemplate"])
		}
		out = append(out, r)
	}
	return out, nil
}

// ---- CloudFormation's side: parameters, conditions, intrinsic functions on them ----------

// LoadStandalone reads the standalone template in dir (as written, its assets
// local paths, or packaged, its artifacts under dir/assets/<key>) as
// CloudFormation deploys it with these parameter values: each checked against its
// AllowedPattern or AllowedValues (a required one missing is refused), the
// Conditions evaluated, resources whose condition is false left out, and every
// Ref to a parameter, Fn::If, Fn::Select, Fn::Split and Fn::Sub on them
// evaluated; what names the stack's own resources is left for Template.Resolve.
func LoadStandalone(dir string, values map[string]string) (*Template, error) {
	raw, err := os.ReadFile(filepath.Join(dir, standaloneFile))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Parameters map[string]struct {
			Default               *string
			AllowedPattern        string
			AllowedValues         []string
			ConstraintDescription string
		}
		Conditions map[string]any
		Resources  map[string]struct {
			Type       string
			Condition  string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", standaloneFile, err)
	}
	ev := &cfnEval{params: map[string]string{}, conditions: map[string]bool{}, exprs: doc.Conditions}
	for name := range values {
		if _, ok := doc.Parameters[name]; !ok {
			return nil, fmt.Errorf("parameter %s: the template has none of that name", name)
		}
	}
	for name, p := range doc.Parameters {
		v, ok := values[name]
		if !ok && p.Default == nil {
			return nil, fmt.Errorf("parameter %s must have a value", name)
		}
		if !ok {
			v = *p.Default
		}
		if p.AllowedPattern != "" && !regexp.MustCompile(`^(?:`+p.AllowedPattern+`)$`).MatchString(v) {
			return nil, fmt.Errorf("parameter %s %q: %s", name, v, p.ConstraintDescription)
		}
		if len(p.AllowedValues) > 0 && !slices.Contains(p.AllowedValues, v) {
			return nil, fmt.Errorf("parameter %s %q: not one of %v", name, v, p.AllowedValues)
		}
		ev.params[name] = v
	}
	tp := &Template{Dir: dir, Resources: map[string]Resource{}, assets: map[string]string{}}
	for id, r := range doc.Resources {
		if r.Condition != "" {
			on, err := ev.condition(r.Condition)
			if err != nil {
				return nil, err
			}
			if !on {
				continue
			}
		}
		props, _, err := ev.eval(r.Properties)
		if err != nil {
			return nil, fmt.Errorf("resource %s: %w", id, err)
		}
		p, _ := props.(map[string]any)
		tp.Resources[id] = Resource{Type: r.Type, Properties: p}
		// A packaged template's S3 locations: the artifacts packageStandalone downloaded.
		for prop, key := range map[string]string{"Code": "S3Key", "DefinitionS3Location": "Key"} {
			if loc, ok := p[prop].(map[string]any); ok {
				k := fmt.Sprint(loc[key])
				tp.assets[k] = filepath.Join(dir, "assets", k)
			}
		}
	}
	return tp, nil
}

// cfnEval evaluates what depends on the parameters alone.
type cfnEval struct {
	params     map[string]string
	conditions map[string]bool
	exprs      map[string]any
}

func (e *cfnEval) condition(name string) (bool, error) {
	if v, ok := e.conditions[name]; ok {
		return v, nil
	}
	expr, ok := e.exprs[name]
	if !ok {
		return false, fmt.Errorf("condition %s is not declared", name)
	}
	v, err := e.boolean(expr)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", name, err)
	}
	e.conditions[name] = v
	return v, nil
}

func (e *cfnEval) boolean(expr any) (bool, error) {
	m, _ := expr.(map[string]any)
	if len(m) != 1 {
		return false, fmt.Errorf("%v is not a condition function", expr)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Condition":
			return e.condition(fmt.Sprint(arg))
		case "Fn::Equals":
			a, _, err := e.eval(args[0])
			if err != nil {
				return false, err
			}
			b, _, err := e.eval(args[1])
			if err != nil {
				return false, err
			}
			as, aok := a.(string)
			bs, bok := b.(string)
			if !aok || !bok {
				return false, fmt.Errorf("Fn::Equals of %v and %v: not both strings after evaluation", a, b)
			}
			return as == bs, nil
		case "Fn::Not":
			v, err := e.boolean(args[0])
			return !v, err
		case "Fn::And", "Fn::Or":
			all := fn == "Fn::And"
			for _, a := range args {
				v, err := e.boolean(a)
				if err != nil {
					return false, err
				}
				if v != all {
					return v, nil
				}
			}
			return all, nil
		}
		return false, fmt.Errorf("%s is not a condition function", fn)
	}
	return false, nil
}

// eval evaluates v as far as the parameters allow; keep is false for
// AWS::NoValue (the property or list element is left out).
func (e *cfnEval) eval(v any) (out any, keep bool, err error) {
	switch v := v.(type) {
	case []any:
		out := []any{}
		for _, x := range v {
			r, keep, err := e.eval(x)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, r)
			}
		}
		return out, true, nil
	case map[string]any:
		if len(v) == 1 {
			for fn, arg := range v {
				if r, handled, keep, err := e.function(fn, arg); handled {
					return r, keep, err
				}
			}
		}
		out := map[string]any{}
		for k, x := range v {
			r, keep, err := e.eval(x)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", k, err)
			}
			if keep {
				out[k] = r
			}
		}
		return out, true, nil
	}
	return v, true, nil
}

var subVarAll = regexp.MustCompile(`\$\{(!?)([^}]+)\}`)

// function evaluates one intrinsic function when its arguments come from
// the parameters; handled is false for one left to Template.Resolve.
func (e *cfnEval) function(fn string, arg any) (out any, handled, keep bool, err error) {
	args, _ := arg.([]any)
	switch fn {
	case "Ref":
		name := fmt.Sprint(arg)
		if name == "AWS::NoValue" {
			return nil, true, false, nil
		}
		if v, ok := e.params[name]; ok {
			return v, true, true, nil
		}
	case "Fn::If":
		on, err := e.condition(fmt.Sprint(args[0]))
		if err != nil {
			return nil, true, false, err
		}
		branch := args[2]
		if on {
			branch = args[1]
		}
		r, keep, err := e.eval(branch)
		return r, true, keep, err
	case "Fn::Split":
		s, _, err := e.eval(args[1])
		if err != nil {
			return nil, true, false, err
		}
		if str, ok := s.(string); ok {
			var out []any
			for _, part := range strings.Split(str, fmt.Sprint(args[0])) {
				out = append(out, part)
			}
			return out, true, true, nil
		}
	case "Fn::Select":
		list, _, err := e.eval(args[1])
		if err != nil {
			return nil, true, false, err
		}
		i, _ := args[0].(float64)
		if l, ok := list.([]any); ok {
			if int(i) >= len(l) {
				return nil, true, false, fmt.Errorf("Fn::Select index %d of a list of %d (CloudFormation fails the stack)", int(i), len(l))
			}
			return l[int(i)], true, true, nil
		}
	case "Fn::Sub":
		text, vars := "", map[string]any{}
		switch a := arg.(type) {
		case string:
			text = a
		case []any:
			text = fmt.Sprint(a[0])
			m, _ := a[1].(map[string]any)
			for k, x := range m {
				r, _, err := e.eval(x)
				if err != nil {
					return nil, true, false, err
				}
				vars[k] = r
			}
		}
		left := false
		out := subVarAll.ReplaceAllStringFunc(text, func(m string) string {
			g := subVarAll.FindStringSubmatch(m)
			if g[1] == "!" {
				return m
			}
			if s, ok := vars[g[2]].(string); ok {
				return s
			}
			if s, ok := e.params[g[2]]; ok {
				return s
			}
			left = true // a pseudo parameter or a resource: Template.Resolve's
			return m
		})
		if left {
			return map[string]any{"Fn::Sub": out}, true, true, nil
		}
		return strings.ReplaceAll(out, "${!", "${"), true, true, nil
	}
	return nil, false, false, nil
}

// cfnEval evaluates what depends on the parameters alone, as CloudFormation
// does, and leaves what names the stack's resources for Template.Resolve.
func TestCfnEvalOnParameters(t *testing.T) {
	ev := &cfnEval{params: map[string]string{"List": "a,b", "Key": "", "Mode": "on"}, conditions: map[string]bool{}}
	if err := json.Unmarshal([]byte(`{
		"HasKey": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Key"}, ""]}]},
		"On": {"Fn::Equals": [{"Ref": "Mode"}, "on"]},
		"Either": {"Fn::Or": [{"Condition": "HasKey"}, {"Condition": "On"}]},
		"Both": {"Fn::And": [{"Condition": "HasKey"}, {"Condition": "On"}]}
	}`), &ev.exprs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, in, want string }{
		{"a parameter", `{"Ref": "List"}`, `"a,b"`},
		{"a resource, left", `{"Ref": "Bucket"}`, `{"Ref": "Bucket"}`},
		{"NoValue drops a list element", `["x", {"Fn::If": ["HasKey", "k", {"Ref": "AWS::NoValue"}]}]`, `["x"]`},
		{"NoValue drops a property", `{"A": {"Fn::If": ["Both", 1, {"Ref": "AWS::NoValue"}]}, "B": 2}`, `{"B": 2}`},
		{"If on Or", `{"Fn::If": ["Either", "yes", "no"]}`, `"yes"`},
		{"Select of Split of Sub", `{"Fn::Select": [1, {"Fn::Split": [",", {"Fn::Sub": "${List},,"}]}]}`, `"b"`},
		{"a padded slot is empty", `{"Fn::Select": [3, {"Fn::Split": [",", {"Fn::Sub": "${List},,"}]}]}`, `""`},
		{"Sub with a variable", `{"Fn::Sub": ["${X}/p/${Key}", {"X": {"Fn::Select": [0, {"Fn::Split": [",", {"Ref": "List"}]}]}}]}`, `"a/p/"`},
		{"Sub with a pseudo parameter, left", `{"Fn::Sub": "arn:${AWS::Partition}:s3:::${List}"}`, `{"Fn::Sub": "arn:${AWS::Partition}:s3:::a,b"}`},
		{"Sub's escape", `{"Fn::Sub": "${!Literal}-${Mode}"}`, `"${Literal}-on"`},
	} {
		var in, want any
		if err := json.Unmarshal([]byte(c.in), &in); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(c.want), &want); err != nil {
			t.Fatal(err)
		}
		got, keep, err := ev.eval(in)
		if err != nil || !keep {
			t.Errorf("%s: keep %v, error %v", c.name, keep, err)
			continue
		}
		if g, _ := json.Marshal(got); string(g) != string(mustMarshal(want)) {
			t.Errorf("%s: %s, want %s", c.name, g, mustMarshal(want))
		}
	}
	var past any
	_ = json.Unmarshal([]byte(`{"Fn::Select": [2, {"Fn::Split": [",", {"Ref": "List"}]}]}`), &past)
	if _, _, err := ev.eval(past); err == nil || !strings.Contains(err.Error(), "index 2 of a list of 2") {
		t.Errorf("Fn::Select past the end: %v, want the error CloudFormation fails the stack with", err)
	}
}

func mustMarshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
