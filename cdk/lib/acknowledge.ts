// cdk-nag reports each wildcard resource of an IAM policy as its own finding, named after the resource as the
// template spells it ("AwsSolutions-IAM5[Resource::<Bucket.Arn>/runs/*]"), and an acknowledgement must name that
// exact finding. How a bucket ARN is spelled depends on where the bucket is — a GetAtt in the same stack, an
// exported value in another stack (strong reference), a stack output (weak reference) — which is known only once
// the app resolves its cross-stack references. So the acknowledgement is made then, in a validation hook (these
// run after the references are resolved and before the validation plugins such as cdk-nag read the tree).
import { Stack, Validations } from "aws-cdk-lib";
import { CfnPolicy } from "aws-cdk-lib/aws-iam";
import type { IConstruct } from "constructs";

/** A resolved CloudFormation value as cdk-nag names it in a finding. */
export function findingName(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value.replace(/\$\{/g, "<").replace(/\}/g, ">");
  if (typeof value === "object" && value !== null) {
    const v = value as Record<string, unknown>;
    const keys = Object.keys(v);
    if (keys.length === 1) {
      const arg = v[keys[0]!];
      switch (keys[0]) {
        case "Fn::Join": {
          const [delimiter, items] = arg as [string, unknown[]];
          return items.map(findingName).join(delimiter);
        }
        case "Fn::Sub": return findingName(arg);
        case "Fn::GetAtt": {
          const [resource, attribute] = arg as [unknown, unknown];
          return `<${findingName(resource)}.${findingName(attribute)}>`;
        }
        case "Fn::ImportValue": return findingName(arg);
        case "Ref": return `<${findingName(arg)}>`;
      }
    }
  }
  return JSON.stringify(value);
}

/** The IAM5 finding of a wildcard resource, as `scope`'s stack spells it (call once references are resolved). */
export function wildcardResource(scope: IConstruct, resource: string): string {
  return `Resource::${findingName(Stack.of(scope).resolve(resource))}`;
}

/** One kind of wildcard the policies under a scope may hold, and why it is acceptable there. */
export interface WildcardRule {
  /** Matches the construct path of the policy (any policy when absent). */
  readonly policyPath?: RegExp;
  /**
   * Matches the finding, e.g. /^Action::kms:GenerateDataKey\*$/ or /^Resource::\*$/; or gives its exact name, once
   * the references are resolved (see wildcardResource).
   */
  readonly finding: RegExp | (() => string);
  readonly reason: string;
}

/** The IAM5 findings of a resolved policy document: its allowed wildcard actions and resources, as cdk-nag names them. */
export function wildcardFindings(document: unknown): string[] {
  const found = new Set<string>();
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);
  for (const statement of list((document as { Statement?: unknown } | undefined)?.Statement ?? [])) {
    const s = statement as { Effect?: string; Action?: unknown; Resource?: unknown };
    if (s.Effect !== "Allow") continue;
    for (const action of list(s.Action)) if (typeof action === "string" && action.includes("*")) found.add(`Action::${action}`);
    for (const resource of list(s.Resource)) {
      const name = findingName(resource);
      if (name.includes("*")) found.add(`Resource::${name}`);
    }
  }
  return [...found];
}

/**
 * Acknowledges, on each IAM policy under `scope`, the IAM5 findings that one of `rules` matches, with that rule's
 * reason; a finding no rule matches stays an error. For policies a library construct writes (CDK Pipelines), whose
 * wildcards are known by their shape rather than by a reference we hold.
 */
export function acknowledgeWildcards(scope: IConstruct, rules: readonly WildcardRule[]): void {
  scope.node.addValidation({
    validate: () => {
      const matches = rules.map((r) => (r.finding instanceof RegExp ? (f: string) => (r.finding as RegExp).test(f) : ((name) => (f: string) => f === name)(r.finding())));
      for (const policy of scope.node.findAll().filter((c): c is CfnPolicy => c instanceof CfnPolicy)) {
        for (const finding of wildcardFindings(Stack.of(policy).resolve(policy.policyDocument))) {
          const rule = rules.find((r, i) => matches[i]!(finding) && (r.policyPath === undefined || r.policyPath.test(policy.node.path)));
          if (rule !== undefined) Validations.of(policy).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason: rule.reason });
        }
      }
      return [];
    },
  });
}
