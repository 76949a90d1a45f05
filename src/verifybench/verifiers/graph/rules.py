"""The refund policy as an executable knowledge graph (RelationalAI semantics DSL): the one module a
domain expert reviews.

Concepts: Customer, Order, RefundPolicy. Facts come from the three tables of facts.py. Every rule below
derives values an LLM may claim about an order; each derived value carries the id of the rule that
produced it (listed in `RULES` with a plain statement and the facts it reads) and the policy it applied,
so a verdict can show its proof.

Why multi-valued relationships and not Properties: on RelationalAI's DuckDB backend, two rules that
derive different values for one Property are merged with MAX without a word. A Relationship keeps every
derived value; two different values for one order and claim type is a conflict inside the knowledge
graph, which gate 2 reports as its own status (e.g. two policies for one tier).

Money is integer cents throughout. In `Order.derives` (what gate 2 joins claims against) every value is
text in the normal form of claims.py: tiers and methods upper-case, booleans `true`/`false`, money as
cents, days as a whole number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing relationalai takes seconds: only building a graph does it
    from relationalai.semantics import Model


@dataclass(frozen=True)
class Rule:
    """One derivation rule: what it says, and the facts (`order.*`, `customer.*`, `policy.*`) it reads."""

    text: str
    facts: tuple[str, ...] = field(default_factory=tuple)


# Facts every policy rule reads to find the policy that applies: the order's customer and their tier.
_POLICY_LOOKUP = ("order.customer_id", "customer.tier", "policy.tier")

RULES: dict[str, Rule] = {
    "tier_from_customer": Rule("an order's customer tier is the tier of the customer who placed it",
                               ("order.customer_id", "customer.tier")),
    "defective_from_order": Rule("an order is defective when its order record says so", ("order.defective",)),
    "window_from_policy": Rule("the return window is the one of the policy for the customer's tier",
                               (*_POLICY_LOOKUP, "policy.return_window_days")),
    "method_from_policy": Rule("the refund method is the one of the policy for the customer's tier",
                               (*_POLICY_LOOKUP, "policy.refund_method")),
    "eligible_in_window": Rule("an order that is not final sale, asked within the return window, is eligible",
                               (*_POLICY_LOOKUP, "order.final_sale", "order.days_since_delivery",
                                "policy.return_window_days")),
    "eligible_defective_in_window": Rule("a defective order asked within the return window is eligible, final sale or not",
                                         (*_POLICY_LOOKUP, "order.defective", "order.days_since_delivery",
                                          "policy.return_window_days")),
    "final_sale_not_eligible": Rule("a final-sale order that is not defective is not eligible",
                                    ("order.final_sale", "order.defective")),
    "window_expired_not_eligible": Rule("an order asked after the return window is not eligible",
                                        (*_POLICY_LOOKUP, "order.days_since_delivery", "policy.return_window_days")),
    "fee_waived_defective": Rule("a defective order pays no restocking fee", (*_POLICY_LOOKUP, "order.defective")),
    "fee_from_policy": Rule("restocking fee = amount x the policy's restocking percentage, rounded to the cent",
                            (*_POLICY_LOOKUP, "order.defective", "order.amount", "policy.restocking_fee_pct")),
    "shipping_defective": Rule("shipping is refunded for a defective order", (*_POLICY_LOOKUP, "order.defective")),
    "shipping_from_policy": Rule("otherwise shipping is refunded only when the policy says so",
                                 (*_POLICY_LOOKUP, "order.defective", "policy.shipping_refundable")),
    "amount_not_eligible": Rule("an order that is not eligible is refunded nothing", (*_POLICY_LOOKUP,)),
    "amount_with_shipping": Rule("an eligible order is refunded amount - restocking fee + shipping",
                                 (*_POLICY_LOOKUP, "order.amount", "order.shipping", "order.defective",
                                  "policy.restocking_fee_pct", "policy.shipping_refundable")),
    "amount_without_shipping": Rule("an eligible order whose shipping is not refundable is refunded amount - restocking fee",
                                    (*_POLICY_LOOKUP, "order.amount", "order.defective", "policy.restocking_fee_pct",
                                     "policy.shipping_refundable")),
    "bereavement_from_policy": Rule("a bereavement refund after the fact is granted only when the policy allows "
                                    "retroactive bereavement requests", (*_POLICY_LOOKUP, "policy.retroactive_bereavement")),
}

# The claim types gate 2 can check: each is a value of `Order.derives`. claims.py gives their value kinds.
CLAIM_TYPES = ("customer_tier", "defective", "return_window_days", "refund_method", "refund_eligible",
               "restocking_fee", "shipping_refundable", "refund_amount", "bereavement_refund")

NO_POLICY = "-"  # the policy field of a value no policy produced (tier, defective)


@dataclass
class RefundGraph:
    """The concepts and relationships of a built model, for queries."""

    model: Model
    Customer: object
    Order: object
    RefundPolicy: object


def define_refund_kg(model: Model, customers, orders, policies) -> RefundGraph:
    """Declare the concepts, load the facts and add every rule to `model`.

    Args:
        model: an empty RelationalAI Model.
        customers, orders, policies: the fact tables (`model.Table(...)`) with the columns of facts.py.
    """
    from relationalai.semantics import Bool, Integer, String
    from relationalai.semantics.std import math, strings

    Customer = model.Concept("Customer", identify_by={"customer_id": String})
    Order = model.Concept("Order", identify_by={"order_id": String})
    RefundPolicy = model.Concept("RefundPolicy", identify_by={"policy_id": String})

    # --- facts -----------------------------------------------------------------------------------
    Customer.name = model.Property(f"{Customer} is named {String:name}")
    Customer.tier = model.Property(f"{Customer} has tier {String:tier}")
    Order.customer = model.Property(f"{Order} belongs to {Customer}")
    Order.amount_cents = model.Property(f"{Order} costs {Integer:amount_cents}")
    Order.shipping_cents = model.Property(f"{Order} shipped for {Integer:shipping_cents}")
    Order.final_sale = model.Property(f"{Order} is final sale {Bool:final_sale}")
    Order.defective = model.Property(f"{Order} is defective {Bool:defective}")
    Order.days_since_delivery = model.Property(f"{Order} was delivered {Integer:days_since_delivery} days ago")
    RefundPolicy.tier = model.Property(f"{RefundPolicy} applies to tier {String:tier}")
    RefundPolicy.return_window_days = model.Property(f"{RefundPolicy} allows returns for {Integer:return_window_days} days")
    RefundPolicy.restocking_fee_pct = model.Property(f"{RefundPolicy} charges {Integer:restocking_fee_pct} percent restocking")
    RefundPolicy.refund_method = model.Property(f"{RefundPolicy} refunds by {String:refund_method}")
    RefundPolicy.shipping_refundable = model.Property(f"{RefundPolicy} refunds shipping {Bool:shipping_refundable}")
    RefundPolicy.retroactive_bereavement = model.Property(
        f"{RefundPolicy} grants bereavement refunds retroactively {Bool:retroactive_bereavement}")

    model.define(Customer.new(customer_id=customers.customer_id, name=customers.name, tier=customers.tier))
    model.define(Order.new(order_id=orders.order_id, amount_cents=orders.amount_cents,
                           shipping_cents=orders.shipping_cents, final_sale=orders.final_sale,
                           defective=orders.defective, days_since_delivery=orders.days_since_delivery))
    model.define(RefundPolicy.new(policy_id=policies.policy_id, tier=policies.tier,
                                  return_window_days=policies.return_window_days,
                                  restocking_fee_pct=policies.restocking_fee_pct,
                                  refund_method=policies.refund_method,
                                  shipping_refundable=policies.shipping_refundable,
                                  retroactive_bereavement=policies.retroactive_bereavement))
    c = Customer.ref()
    model.where(Order.order_id == orders.order_id, c.customer_id == orders.customer_id).define(Order.customer(c))

    # --- which policy governs an order: the policy of its customer's tier (several = a conflict) --
    p = RefundPolicy.ref()
    Order.policy = model.Relationship(f"{Order} is governed by {RefundPolicy}")
    model.where(Order.customer(c), c.tier == p.tier).define(Order.policy(p))

    # --- eligibility ------------------------------------------------------------------------------
    Order.eligible = model.Relationship(f"{Order} is refund eligible {Bool:eligible} by {String:rule} under {RefundPolicy}")
    within = Order.days_since_delivery <= p.return_window_days
    model.where(Order.policy(p), Order.final_sale == False, within).define(
        Order.eligible(True, "eligible_in_window", p))
    model.where(Order.policy(p), Order.defective == True, within).define(
        Order.eligible(True, "eligible_defective_in_window", p))
    model.where(Order.policy(p), Order.final_sale == True, Order.defective == False).define(
        Order.eligible(False, "final_sale_not_eligible", p))
    model.where(Order.policy(p), Order.days_since_delivery > p.return_window_days).define(
        Order.eligible(False, "window_expired_not_eligible", p))

    # --- restocking fee and shipping --------------------------------------------------------------
    Order.restocking_fee = model.Relationship(f"{Order} owes restocking fee {Integer:cents} by {String:rule} under {RefundPolicy}")
    model.where(Order.policy(p), Order.defective == True).define(
        Order.restocking_fee(0, "fee_waived_defective", p))
    model.where(Order.policy(p), Order.defective == False).define(
        Order.restocking_fee(math.floor_divide(Order.amount_cents * p.restocking_fee_pct + 50, 100), "fee_from_policy", p))

    Order.shipping_back = model.Relationship(f"{Order} has shipping refundable {Bool:refundable} by {String:rule} under {RefundPolicy}")
    model.where(Order.policy(p), Order.defective == True).define(
        Order.shipping_back(True, "shipping_defective", p))
    model.where(Order.policy(p), Order.defective == False).define(
        Order.shipping_back(p.shipping_refundable, "shipping_from_policy", p))

    # --- refund amount ----------------------------------------------------------------------------
    Order.refund = model.Relationship(f"{Order} is refunded {Integer:cents} by {String:rule} under {RefundPolicy}")
    r1, r2, r3 = String.ref(), String.ref(), String.ref()
    fee = Integer.ref()
    model.where(Order.eligible(False, r1, p)).define(Order.refund(0, "amount_not_eligible", p))
    model.where(Order.eligible(True, r1, p), Order.restocking_fee(fee, r2, p), Order.shipping_back(True, r3, p)).define(
        Order.refund(Order.amount_cents - fee + Order.shipping_cents, "amount_with_shipping", p))
    model.where(Order.eligible(True, r1, p), Order.restocking_fee(fee, r2, p), Order.shipping_back(False, r3, p)).define(
        Order.refund(Order.amount_cents - fee, "amount_without_shipping", p))

    # --- the claim view: every checkable value as normalised text, with its rule and policy ------
    Order.derives = model.Relationship(
        f"{Order} derives {String:claim_type} = {String:value} by {String:rule} under {String:policy_id}")
    rule, n = String.ref(), Integer.ref()
    model.where(Order.customer(c)).define(Order.derives("customer_tier", c.tier, "tier_from_customer", NO_POLICY))
    for flag, text in ((True, "true"), (False, "false")):
        model.where(Order.defective == flag).define(Order.derives("defective", text, "defective_from_order", NO_POLICY))
        model.where(Order.eligible(flag, rule, p)).define(Order.derives("refund_eligible", text, rule, p.policy_id))
        model.where(Order.shipping_back(flag, rule, p)).define(Order.derives("shipping_refundable", text, rule, p.policy_id))
        model.where(Order.policy(p), p.retroactive_bereavement == flag).define(
            Order.derives("bereavement_refund", text, "bereavement_from_policy", p.policy_id))
    model.where(Order.policy(p)).define(
        Order.derives("return_window_days", strings.string(p.return_window_days), "window_from_policy", p.policy_id),
        Order.derives("refund_method", p.refund_method, "method_from_policy", p.policy_id))
    model.where(Order.restocking_fee(n, rule, p)).define(
        Order.derives("restocking_fee", strings.string(n), rule, p.policy_id))
    model.where(Order.refund(n, rule, p)).define(Order.derives("refund_amount", strings.string(n), rule, p.policy_id))

    return RefundGraph(model=model, Customer=Customer, Order=Order, RefundPolicy=RefundPolicy)
