"""The refund policy as an executable knowledge graph (RelationalAI semantics DSL): the one module a
domain expert reviews. A domain pack of verifybench's `graph` verifier (see pack.yaml and docs/graph.md).

Concepts: Customer, Order, RefundPolicy, from the tables customers, orders and policies. An order is
governed by the policy of its customer's tier. Every value a claim is checked against is a relationship
of Order with three fields: the value, the id of the rule that derived it (described in `RULES`), and
the id of the policy it applied ("-" when none did).

Why relationships and not Properties: on RelationalAI's DuckDB backend, two rules that derive different
values for one Property are merged with MAX without a word. A relationship keeps every derived value; two
different values for one order is a conflict inside the knowledge graph, which gate 2 reports as its own
status (e.g. two policies for one tier).

Money is integer cents throughout.
"""

from __future__ import annotations

from verifybench.verifiers.graph.pack import NO_BASIS, Rule

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


def define(model, tables) -> dict:
    """Declare the concepts, load the facts and add every rule to `model`.

    Args:
        model: an empty RelationalAI Model.
        tables: the fact tables by name (`model.Table(...)`), with the columns of pack.yaml (`as:` names).

    Returns: the concepts by name; `Order` is the subject of claims.
    """
    from relationalai.semantics import Bool, Integer, String
    from relationalai.semantics.std import math

    customers, orders, policies = tables["customers"], tables["orders"], tables["policies"]
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

    # --- values a claim is checked against: (value, rule, policy id) -------------------------------
    Order.customer_tier = model.Relationship(f"{Order} has customer tier {String:tier} by {String:rule} under {String:basis}")
    model.where(Order.customer(c)).define(Order.customer_tier(c.tier, "tier_from_customer", NO_BASIS))

    Order.is_defective = model.Relationship(f"{Order} is found defective {Bool:defective} by {String:rule} under {String:basis}")
    model.where(Order.defective == True).define(Order.is_defective(True, "defective_from_order", NO_BASIS))
    model.where(Order.defective == False).define(Order.is_defective(False, "defective_from_order", NO_BASIS))

    Order.return_window = model.Relationship(f"{Order} may be returned within {Integer:days} days by {String:rule} under {String:basis}")
    Order.refund_method = model.Relationship(f"{Order} is refunded by {String:method} by {String:rule} under {String:basis}")
    Order.bereavement = model.Relationship(
        f"{Order} gets a retroactive bereavement refund {Bool:granted} by {String:rule} under {String:basis}")
    model.where(Order.policy(p)).define(
        Order.return_window(p.return_window_days, "window_from_policy", p.policy_id),
        Order.refund_method(p.refund_method, "method_from_policy", p.policy_id),
        Order.bereavement(p.retroactive_bereavement, "bereavement_from_policy", p.policy_id))

    # --- eligibility ------------------------------------------------------------------------------
    Order.eligible = model.Relationship(f"{Order} is refund eligible {Bool:eligible} by {String:rule} under {String:basis}")
    within = Order.days_since_delivery <= p.return_window_days
    model.where(Order.policy(p), Order.final_sale == False, within).define(
        Order.eligible(True, "eligible_in_window", p.policy_id))
    model.where(Order.policy(p), Order.defective == True, within).define(
        Order.eligible(True, "eligible_defective_in_window", p.policy_id))
    model.where(Order.policy(p), Order.final_sale == True, Order.defective == False).define(
        Order.eligible(False, "final_sale_not_eligible", p.policy_id))
    model.where(Order.policy(p), Order.days_since_delivery > p.return_window_days).define(
        Order.eligible(False, "window_expired_not_eligible", p.policy_id))

    # --- restocking fee and shipping --------------------------------------------------------------
    Order.restocking_fee = model.Relationship(f"{Order} owes restocking fee {Integer:cents} by {String:rule} under {String:basis}")
    model.where(Order.policy(p), Order.defective == True).define(
        Order.restocking_fee(0, "fee_waived_defective", p.policy_id))
    model.where(Order.policy(p), Order.defective == False).define(
        Order.restocking_fee(math.floor_divide(Order.amount_cents * p.restocking_fee_pct + 50, 100), "fee_from_policy",
                             p.policy_id))

    Order.shipping_back = model.Relationship(f"{Order} has shipping refundable {Bool:refundable} by {String:rule} under {String:basis}")
    model.where(Order.policy(p), Order.defective == True).define(
        Order.shipping_back(True, "shipping_defective", p.policy_id))
    model.where(Order.policy(p), Order.defective == False).define(
        Order.shipping_back(p.shipping_refundable, "shipping_from_policy", p.policy_id))

    # --- refund amount: the eligibility, fee and shipping of the same policy ------------------------
    Order.refund = model.Relationship(f"{Order} is refunded {Integer:cents} by {String:rule} under {String:basis}")
    r1, r2, r3, pid = String.ref(), String.ref(), String.ref(), String.ref()
    fee = Integer.ref()
    model.where(Order.eligible(False, r1, pid)).define(Order.refund(0, "amount_not_eligible", pid))
    model.where(Order.eligible(True, r1, pid), Order.restocking_fee(fee, r2, pid), Order.shipping_back(True, r3, pid)).define(
        Order.refund(Order.amount_cents - fee + Order.shipping_cents, "amount_with_shipping", pid))
    model.where(Order.eligible(True, r1, pid), Order.restocking_fee(fee, r2, pid), Order.shipping_back(False, r3, pid)).define(
        Order.refund(Order.amount_cents - fee, "amount_without_shipping", pid))

    return {"Customer": Customer, "Order": Order, "RefundPolicy": RefundPolicy}
