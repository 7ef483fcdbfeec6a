// cdk-nag reports each wildcard resource of an IAM policy as its own finding, named after the resource as the
// template spells it ("AwsSolutions-IAM5[Resource::<Bucket.Arn>/runs/*]"), and an acknowledgement must name that
// exact finding. How a bucket ARN is spelled depends on where the bucket is — a GetAtt in the same stack, an
// exported value in another stack (strong reference), a stack output (weak reference) — which is known only once
// the app resolves its cross-stack references. So the acknowledgement is made then, in a validation hook (these
// run after the references are resolved and before the validation plugins such as cdk-nag read the tree).
import { Stack, Validations } from "aws-cdk-lib";
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

/**
 * Acknowledges, on `scope` (a role or anything above its policy), the cdk-nag IAM5 finding of each wildcard resource
 * `resources()` returns, with `reason`.
 */
export function acknowledgeWildcardResources(scope: IConstruct, resources: () => readonly string[], reason: string): void {
  scope.node.addValidation({
    validate: () => {
      for (const resource of resources()) {
        Validations.of(scope).acknowledge({ id: `AwsSolutions-IAM5[Resource::${findingName(Stack.of(scope).resolve(resource))}]`, reason });
      }
      return [];
    },
  });
}
